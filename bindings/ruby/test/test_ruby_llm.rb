# frozen_string_literal: true

require_relative "helper"
require "open3"
require "rbconfig"

# RubyLLM cannot be installed here. Its tool contract, as lib/ruby_llm/tool.rb states it: a
# subclass of RubyLLM::Tool declares `description "…"` and `parameter :name, type:,
# description:, required:` (`param` in older releases), implements `execute(**args)` whose value
# goes back to the model, and is named by `tool_name`; the chat instantiates the class given to
# `with_tools` and calls `tool.call(args)`, which calls `execute` with the arguments as keywords.
# This stands in for it, written from that contract only, and must be loaded before codecell.
class TestRubyLLM < Minitest::Test
  CONTRACT = <<~'RUBY'
    module RubyLLM
      Parameter = Struct.new(:name, :type, :description, :required, keyword_init: true)
      class Tool
        class << self
          def description(text = nil)
            return @description unless text
            @description = text
          end
          def parameter(name, type: "string", description: nil, required: true)
            parameters[name] = Parameter.new(name: name, type: type, description: description, required: required)
          end
          def parameters
            @parameters ||= {}
          end
          def tool_name
            name.split("::").last.gsub(/([a-z\d])([A-Z])/, '\1_\2').downcase.delete_suffix("_tool")
          end
        end
        def name = self.class.tool_name
        def description = self.class.description
        def parameters = self.class.parameters
        def call(args) = execute(**args.transform_keys(&:to_sym))
      end
      class Chat
        attr_reader :tools
        def initialize = @tools = {}
        def with_tools(*classes)
          classes.each { |c| t = c.is_a?(Class) ? c.new : c; @tools[t.name.to_sym] = t }
          self
        end
        # What a provider sends for each tool, and what a model's call gets back.
        def definitions
          @tools.values.map do |t|
            { name: t.name, description: t.description,
              parameters: t.parameters.transform_values { |p| { type: p.type, description: p.description, required: p.required } } }
          end
        end
        def model_calls(name, args) = @tools.fetch(name.to_sym).call(args)
      end
    end
  RUBY

  SCRIPT = <<~'RUBY'
    require "codecell"
    require "json"
    raise "CodeCell::Tool is not a RubyLLM::Tool" unless CodeCell::Tool < RubyLLM::Tool
    class SalesAnalyticsTool < CodeCell::Tool
      mount source: ARGV[0], dest: "/data", description: "the data"
    end
    chat = RubyLLM::Chat.new.with_tools(SalesAnalyticsTool)
    definition = chat.definitions.first
    answer = chat.model_calls("sales_analytics", { "code" => "Dir.children('/data').sort" })
    puts JSON.generate(definition: definition, answer: answer)
    SalesAnalyticsTool.close
  RUBY

  # Older releases: `param :name, type:, desc:, required:`.
  OLDER = CONTRACT.sub(/def parameter\(name, type: "string", description: nil, required: true\)\n(.*?)\n/m) do
    "def param(name, type: \"string\", desc: nil, required: true)\n#{$1.sub("description: description", "description: desc")}\n"
  end

  def test_the_older_param_declaration
    refute_includes OLDER, "def parameter("
    check_chat(OLDER)
  end

  def test_a_tool_class_works_with_the_chat
    check_chat(CONTRACT)
  end

  def check_chat(contract)
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "a.csv"), "")
      File.chmod(0o755, dir)
      out, err, status = Open3.capture3(RbConfig.ruby, "-e", contract + SCRIPT, dir)
      assert status.success?, err
      got = JSON.parse(out.lines.last)
      assert_equal "sales_analytics", got["definition"]["name"]
      assert_includes got["definition"]["description"], "- `/data` — the data"
      assert_equal({ "type" => "string", "description" => "Complete Ruby script to execute in the sandbox",
                     "required" => true }, got["definition"]["parameters"]["code"])
      assert_equal({ "status" => "ok", "value" => ["a.csv"] }, got["answer"])
    end
  end

  def test_without_ruby_llm_the_tool_stands_alone
    refute defined?(::RubyLLM)
    assert_equal Object, CodeCell::Tool.superclass
  end
end
