# frozen_string_literal: true

require_relative "helper"
require "open3"
require "rbconfig"

# A chat turn of RubyLLM itself, where `require "ruby_llm"` works (skipped otherwise): RubyLLM's
# OpenAI provider over a Faraday adapter that plays the model (no network), CodeCell::Tool as
# the tool, in each load order. What RubyLLM sends back to the model is read from its request.
class TestRealRubyLLM < Minitest::Test
  CHAT = <<~'RUBY'
    require "json"
    require "fileutils"
    order, dir, arguments = ARGV
    case order
    when "ruby_llm,codecell" then require "ruby_llm"; require "codecell"
    when "codecell,ruby_llm" then require "codecell"; require "ruby_llm"
    when "codecell,adapter" then require "codecell"; require "codecell/ruby_llm"
    when "code_mode" then require "ruby_llm"; require "codecell/code_mode"
    when "made before ruby_llm"
      require "codecell"
      class SalesAnalytics < CodeCell::Tool; end
      require "ruby_llm"
    end
    SalesAnalytics = Class.new(order == "code_mode" ? RubyLLM::CodeMode : CodeCell::Tool) unless defined?(SalesAnalytics)
    SalesAnalytics.mount source: dir, dest: "/data", description: "the data"
    FileUtils.rm_rf(dir) if arguments == "gone"
    arguments = JSON.generate(code: "Dir.children('/data').sort") if arguments.nil? || arguments == "gone"

    # The model: first a call of the tool, then an answer; in OpenAI's Responses API (RubyLLM
    # 2.0) or chat completions (1.x).
    class Model < Faraday::Adapter
      REQUESTS = []
      def call(env)
        super
        REQUESTS << JSON.parse(env.body)
        first = REQUESTS.size == 1
        body = if env.url.path.end_with?("/responses")
                 item = if first
                          { type: "function_call", id: "fc_1", call_id: "call_1", name: "sales_analytics",
                            arguments: ARGV[2].nil? || ARGV[2] == "gone" ? JSON.generate(code: "Dir.children('/data').sort") : ARGV[2],
                            status: "completed" }
                        else
                          { type: "message", id: "m_1", role: "assistant", status: "completed",
                            content: [{ type: "output_text", text: "done" }] }
                        end
                 { id: "r", object: "response", status: "completed", model: "gpt-4o-mini", output: [item],
                   usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } }
               else
                 message = if first
                             { role: "assistant", content: nil,
                               tool_calls: [{ id: "call_1", type: "function",
                                              function: { name: "sales_analytics",
                                                          arguments: ARGV[2].nil? || ARGV[2] == "gone" ? JSON.generate(code: "Dir.children('/data').sort") : ARGV[2] } }] }
                           else
                             { role: "assistant", content: "done" }
                           end
                 { id: "c", object: "chat.completion", created: 0, model: "gpt-4o-mini",
                   choices: [{ index: 0, message: message, finish_reason: first ? "tool_calls" : "stop" }],
                   usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }
               end
        save_response(env, 200, JSON.generate(body), { "Content-Type" => "application/json" })
        @app.call(env)
      end
    end
    Faraday::Adapter.register_middleware(codecell_model: Model)
    RubyLLM.configure do |c|
      c.openai_api_key = "none"
      c.faraday_adapter = :codecell_model
    end
    chat = RubyLLM.chat(model: "gpt-4o-mini", provider: :openai, assume_model_exists: true)
    answer = chat.with_tools(SalesAnalytics).ask("What is in /data?")
    declaration = Model::REQUESTS[0]["tools"].first
    declaration = declaration["function"] || declaration
    sent = (Model::REQUESTS[1]["messages"] || Model::REQUESTS[1]["input"]).find { |m| m["role"] == "tool" || m["type"] == "function_call_output" }
    puts JSON.generate(version: RubyLLM::VERSION, ruby_llm_tool: (SalesAnalytics < RubyLLM::Tool) || false,
                       name: declaration["name"], description: declaration["description"],
                       parameters: declaration["parameters"], content: sent["content"] || sent["output"],
                       answer: answer.content)
    SalesAnalytics.close
  RUBY

  def setup
    _out, err, status = Open3.capture3(RbConfig.ruby, "-e", 'require "ruby_llm"; RubyLLM::Chat')
    skip "RubyLLM cannot be loaded here: #{err.lines.first&.strip}" unless status.success?
    @dir = Dir.mktmpdir
    File.chmod(0o755, @dir)
    File.write(File.join(@dir, "a.csv"), "")
  end

  def teardown
    FileUtils.rm_rf(@dir) if @dir
  end

  def turn(order, arguments = nil)
    out, err, status = Open3.capture3(RbConfig.ruby, "-e", CHAT, order, @dir, *arguments)
    assert status.success?, "#{order}: #{err}"
    JSON.parse(out.lines.last)
  end

  def test_a_chat_turn_in_each_load_order
    ["ruby_llm,codecell", "codecell,ruby_llm", "codecell,adapter", "code_mode", "made before ruby_llm"].each do |order|
      got = turn(order)
      assert_equal "sales_analytics", got["name"], order
      assert_includes got["description"], "- `/data` — the data", order
      assert_equal ["code"], got["parameters"]["required"], order
      assert_equal "string", got["parameters"]["properties"]["code"]["type"], order
      assert_equal({ "status" => "ok", "value" => ["a.csv"] }, JSON.parse(got["content"]), "#{order} (#{got["version"]})")
      assert_equal "done", got["answer"]
      assert_equal order != "made before ruby_llm", got["ruby_llm_tool"], order
    end
  end

  def test_errors_come_back_to_the_model
    got = turn("codecell,adapter", '{"code":"1","path":"/"}')
    assert_includes got["content"], "Invalid tool arguments: unknown keyword: path"
    got = turn("codecell,adapter", "gone")
    sandbox = JSON.parse(got["content"])
    assert_equal "sandbox_error", sandbox["status"]
    assert_includes sandbox["error"]["message"], "does not exist"
    assert_equal "done", got["answer"]
  end
end
