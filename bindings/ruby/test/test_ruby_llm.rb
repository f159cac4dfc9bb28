# frozen_string_literal: true

require_relative "helper"
require "open3"
require "rbconfig"

# CodeCell::Tool in a RubyLLM chat. RubyLLM is not installed here: stand_in/ruby_llm.rb stands
# in for it, written from its source (its three release lines: 2.0, 1.9-1.16, 1.0-1.8), and is
# loaded in child processes (RubyLLM must never reach this process: CodeCell::Tool is plain
# here). The chat dispatches as RubyLLM's does: arguments a Hash with string keys, tool_call:
# (2.0), the result made the tool message's content (to_json in 2.0, to_s before), a missing or
# unknown argument answered {error: "Invalid tool arguments: …"}, an exception ending the chat.
# test_real_ruby_llm.rb runs the same turn against RubyLLM itself where it is installed.
class TestRubyLLM < Minitest::Test
  STAND_IN = File.join(__dir__, "stand_in")
  LINES = %w[2.0 1.16 1.8].freeze

  # A tool class on /data, and a model that calls it once with `code` and then answers with
  # what it read; prints the declaration the provider sent, the tool message and the answer.
  TURN = <<~'RUBY'
    TOOL ||= proc do
      Class.new(CodeCell::Tool) { mount source: ARGV[0], dest: "/data", description: "the data" }
    end
    def turn(klass, arguments)
      Object.const_set(:SalesAnalyticsTool, klass) unless klass.name
      provider = RubyLLM::Provider.new(
        ->(_messages, _tools) {
          RubyLLM::Message.new(role: :assistant, content: "",
                               tool_calls: { "call_1" => RubyLLM::ToolCall.new(id: "call_1", name: klass.tool_name, arguments: arguments) })
        },
        ->(messages, _tools) { RubyLLM::Message.new(role: :assistant, content: "read: #{messages.last.content}") }
      )
      chat = RubyLLM::Chat.new(provider).with_tools(klass)
      answer = chat.ask("What is in /data?")
      tool_message = chat.messages.find { |m| m.role == :tool }
      puts JSON.generate(declaration: provider.declarations.first, tool_message: tool_message.content,
                         tool_call_id: tool_message.tool_call_id, answer: answer.content,
                         ruby_llm_tool: klass < RubyLLM::Tool ? true : false)
      klass.close
    end
  RUBY

  def setup
    @dir = Dir.mktmpdir
    File.chmod(0o755, @dir)
    File.write(File.join(@dir, "a.csv"), "")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def child(script, line: "2.0", args: [@dir], stand_in: true)
    env = { "RUBY_LLM_LINE" => line }
    include = stand_in ? ["-I", STAND_IN] : []
    Open3.capture3(env, RbConfig.ruby, *include, "-e", script, *args)
  end

  def turn_of(script, line: "2.0")
    out, err, status = child(script, line: line)
    assert status.success?, "line #{line}: #{err}"
    JSON.parse(out.lines.last)
  end

  def assert_turn(got, line)
    assert_equal "sales_analytics", got["declaration"]["function"]["name"], line
    assert_includes got["declaration"]["function"]["description"], "- `/data` — the data", line
    code = got["declaration"]["function"]["parameters"]["properties"]["code"]
    assert_equal({ "type" => "string", "description" => "Complete Ruby script to execute in the sandbox" }, code, line)
    assert_equal ["code"], got["declaration"]["function"]["parameters"]["required"], line
    # What the model read: the seed's result hash as JSON, in every line.
    assert_equal({ "status" => "ok", "value" => ["a.csv"] }, JSON.parse(got["tool_message"]), line)
    assert_equal "call_1", got["tool_call_id"]
    assert_equal "read: #{got["tool_message"]}", got["answer"]
  end

  # RubyLLM's 2.0 line calls tool.call(args, tool_call: tool_call): a call(args) of one
  # argument fails this test with an ArgumentError in the chat.
  def test_a_chat_turn_on_each_release_line
    LINES.each do |line|
      got = turn_of(<<~RUBY + TURN + 'turn(TOOL.call, { "code" => "Dir.children(\'/data\').sort" })', line: line)
        require "ruby_llm"
        require "codecell"
      RUBY
      assert_turn(got, line)
      assert got["ruby_llm_tool"], line
    end
  end

  def test_every_load_order_gives_a_ruby_llm_tool
    orders = {
      "ruby_llm, then codecell" => %w[ruby_llm codecell],
      "codecell, then ruby_llm (a Gemfile's order)" => %w[codecell ruby_llm],
      "codecell, then the adapter" => %w[codecell codecell/ruby_llm],
      "the adapter alone" => %w[codecell/ruby_llm],
      "the adapter, then codecell" => %w[codecell/ruby_llm codecell]
    }
    orders.each do |what, requires|
      script = requires.map { |r| "require #{r.inspect}\n" }.join + <<~RUBY + TURN +
        raise "CodeCell::Tool is not a RubyLLM::Tool" unless CodeCell::Tool < RubyLLM::Tool
      RUBY
               'turn(TOOL.call, { "code" => "Dir.children(\'/data\').sort" })'
      got = turn_of(script)
      assert_turn(got, what)
      assert got["ruby_llm_tool"], what
    end
  end

  def test_codecell_alone_never_loads_ruby_llm
    out, err, status = child('require "codecell"; CodeCell::Tool; p [defined?(RubyLLM), CodeCell::Tool.superclass]')
    assert status.success?, err
    assert_equal "[nil, Object]", out.strip
  end

  # A Ruby class keeps its superclass: a tool class made before RubyLLM was loaded is not a
  # RubyLLM::Tool, yet the chat takes it (RubyLLM's chat reads the tool's methods only).
  def test_a_tool_made_before_ruby_llm_still_serves_the_chat
    LINES.each do |line|
      got = turn_of(<<~RUBY + TURN + 'turn(SalesAnalyticsTool, { "code" => "Dir.children(\'/data\').sort" })', line: line)
        require "codecell"
        class SalesAnalyticsTool < CodeCell::Tool
          mount source: ARGV[0], dest: "/data", description: "the data"
        end
        require "ruby_llm"
      RUBY
      assert_turn(got, line)
      refute got["ruby_llm_tool"], line
    end
  end

  # The message of the LoadError that requiring `library` raises after `before`.
  def load_error(before, library)
    out, err, status = child(before + <<~RUBY)
      begin
        require #{library.inspect}
      rescue LoadError => e
        puts e.message
        exit 3
      end
    RUBY
    assert_equal 3, status.exitstatus, err
    out
  end

  def test_the_adapter_refuses_a_tool_class_made_without_ruby_llm
    out = load_error(<<~'RUBY', "codecell/ruby_llm")
      require "codecell"
      class Early < CodeCell::Tool; end
    RUBY
    assert_includes out, "CodeCell::Tool (and Early) was made before RubyLLM was loaded"
    assert_includes out, 'require "codecell/ruby_llm" before the first use of CodeCell::Tool'
  end

  def test_tool_call_reaches_an_execute_that_declares_it
    got = turn_of(<<~'RUBY' + TURN + 'turn(AUDITED, { "code" => "1 + 1" })')
      require "codecell/ruby_llm"
      AUDITED = Class.new(CodeCell::Tool) do
        def execute(code:, tool_call: nil)
          super.merge(tool_call_id: tool_call&.id)
        end
      end
    RUBY
    assert_equal({ "status" => "ok", "value" => 2, "tool_call_id" => "call_1" }, JSON.parse(got["tool_message"]))
  end

  def test_bad_arguments_are_the_models_errors
    cases = {
      '{ "code" => "1", "path" => "/x" }' => "Invalid tool arguments: unknown keyword: path",
      "{}" => "Invalid tool arguments: missing keyword: code",
      '{ "code" => 5 }' => "Invalid tool arguments: code must be a String, not Integer"
    }
    cases.each do |arguments, error|
      %w[codecell/ruby_llm codecell].each do |library| # a RubyLLM tool, and one made before RubyLLM
        script = <<~RUBY + TURN + "turn(KLASS, #{arguments})"
          require #{library.inspect}
          KLASS = Class.new(CodeCell::Tool) { mount source: ARGV[0], dest: "/data" }
          require "ruby_llm"
        RUBY
        got = turn_of(script)
        assert_equal({ "error" => error }, JSON.parse(got["tool_message"]), "#{library}: #{arguments}")
      end
    end
  end

  # The seed: execute never raises into the chat's loop.
  def test_a_sandbox_that_cannot_be_made_is_a_sandbox_error_in_the_chat
    gone = File.join(@dir, "gone")
    Dir.mkdir(gone)
    script = <<~RUBY + TURN + 'turn(KLASS, { "code" => "1" })'
      require "codecell/ruby_llm"
      KLASS = Class.new(CodeCell::Tool) { mount source: #{gone.inspect}, dest: "/data" }
      Dir.rmdir(#{gone.inspect})
    RUBY
    got = turn_of(script)
    message = JSON.parse(got["tool_message"])
    assert_equal "sandbox_error", message["status"]
    assert_equal "ArgumentError", message["error"]["class"]
    assert_includes message["error"]["message"], "#{gone} does not exist"
  end

  def test_the_code_parameter_names_the_language
    %w[2.0 1.16].each do |line|
      got = turn_of(<<~'RUBY' + TURN + 'turn(PY, { "code" => "import os\nsorted(os.listdir(\'/data\'))" })', line: line)
        require "codecell/ruby_llm"
        PY = Class.new(CodeCell::Tool) do
          language :python
          mount source: ARGV[0], dest: "/data"
        end
      RUBY
      assert_equal "Complete Python script to execute in the sandbox",
                   got["declaration"]["function"]["parameters"]["properties"]["code"]["description"], line
      assert_equal({ "status" => "ok", "value" => ["a.csv"] }, JSON.parse(got["tool_message"]), line)
    end
  end

  # The seed's README, unchanged but for the require.
  def test_the_seeds_code_mode_spelling
    got = turn_of(<<~'RUBY' + TURN + 'turn(SalesAnalyticsTool, { "code" => "Dir.children(\'/data\').sort" })')
      require "ruby_llm"
      require "codecell/code_mode"
      class SalesAnalyticsTool < RubyLLM::CodeMode
        mount source: ARGV[0], dest: "/data", description: "the data"
      end
      raise "not a CodeCell::Tool" unless RubyLLM::CodeMode < CodeCell::Tool
      raise "build_description" unless SalesAnalyticsTool.build_description == SalesAnalyticsTool.description
      raise "mount_rw" unless Class.new(RubyLLM::CodeMode) { mount_rw source: ARGV[0], dest: "/w" }.mounts.first.mode == "rw"
    RUBY
    assert_turn(got, "code_mode")
    assert got["ruby_llm_tool"]
  end

  def test_code_mode_refuses_the_seed_gem_loaded
    out = load_error(<<~'RUBY', "codecell/code_mode")
      require "ruby_llm"
      module RubyLLM
        class CodeMode < Tool # what ruby_llm-code_mode defines
          VERSION = "0.1.1"
        end
      end
    RUBY
    assert_includes out, "RubyLLM::CodeMode is already defined by ruby_llm-code_mode 0.1.1 (-e)"
    assert_includes out, "load either it or codecell/code_mode, not both"
  end

  def test_without_ruby_llm_the_tool_stands_alone
    refute defined?(::RubyLLM)
    assert_equal Object, CodeCell::Tool.superclass
    _out, err, status = child('require "codecell/ruby_llm"', stand_in: false)
    refute status.success?
    assert_match(/cannot load such file -- ruby_llm/, err)
  end
end
