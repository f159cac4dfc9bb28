# frozen_string_literal: true

# A stand-in for RubyLLM (crmne/ruby_llm), loaded with -I by test_ruby_llm.rb's child processes
# where RubyLLM is not installed. It is written from RubyLLM's source, method by method, and
# keeps only what a chat does with a tool; each part names the lines it stands for.
# RUBY_LLM_LINE picks the release line:
#   "2.0"  the main branch after 1.16.0, the seed gem's target (ruby_llm >= 2.0)
#   "1.16" releases 1.9 to 1.16
#   "1.8"  releases 1.0 to 1.8
# Providers are out of reach: a Provider here is a script of the model's answers, and
# Provider.declaration renders a tool as OpenAI's chat completions protocol does.
require "json"

module RubyLLM
  LINE = ENV.fetch("RUBY_LLM_LINE", "2.0")
  raise ArgumentError, "RUBY_LLM_LINE: 2.0, 1.16 or 1.8, not #{LINE}" unless %w[2.0 1.16 1.8].include?(LINE)

  # lib/ruby_llm/tool.rb, class Parameter: `desc:` up to 1.16, `description:` since 1.15.
  class Parameter
    attr_reader :name, :type, :description, :required

    def initialize(name, type: "string", description: nil, desc: nil, required: true)
      @name = name
      @type = type
      @description = description || desc
      @required = required
    end
  end

  # lib/ruby_llm/tool.rb, class Tool.
  class Tool
    class << self
      # 2.0 (tool.rb:59): declared parameters and provider options are copied to a subclass.
      def inherited(subclass)
        super
        return unless LINE == "2.0"

        subclass.instance_variable_set(:@declared_parameters, declared_parameters.dup)
        subclass.instance_variable_set(:@provider_options, provider_options.dup)
      end

      def description(text = nil)
        return @description unless text

        @description = text
      end

      # 2.0 (tool.rb:77): the underscored class name without "_tool"; before, Tool#name did it.
      def tool_name
        name.to_s.split("::").last.gsub(/([A-Z]+)([A-Z][a-z])/, '\1_\2').gsub(/([a-z\d])([A-Z])/, '\1_\2')
            .downcase.delete_suffix("_tool")
      end

      if LINE == "2.0"
        # tool.rb:111 parameter, :115 declared_parameters, :136 parameters is the schema's
        # setter (it raises without a schema), :191 provider_options.
        def parameter(name, **options)
          declared_parameters[name] = Parameter.new(name, **options)
        end

        def declared_parameters
          @declared_parameters ||= {}
        end

        def parameters(schema = nil)
          raise ArgumentError, "parameters requires a schema or a block" if schema.nil?

          @schema = schema
          self
        end

        def provider_options(options = nil)
          return @provider_options ||= {} if options.nil?

          @provider_options = options.to_h
          self
        end

        # tool.rb:199 split_result / :221 result_content: the tool message's content.
        def split_result(result)
          case result
          when String then [result, []]
          when Hash, Array then [result.to_json, []]
          else [result.to_s, []]
          end
        end
      else
        # 1.x: `param`, and `parameters` reads the Hash; 1.9 added provider_params.
        def param(name, **options)
          parameters[name] = Parameter.new(name, **options)
        end

        def parameters
          @parameters ||= {}
        end

        def provider_params
          @provider_params ||= {}
        end
      end
    end

    def name
      self.class.tool_name
    end

    def description
      self.class.description
    end

    if LINE == "2.0"
      def declared_parameters
        self.class.declared_parameters
      end

      def provider_options
        self.class.provider_options
      end

      def requires_approval?
        false
      end

      # tool.rb:264: from the declared parameters (an explicit schema is not stood in for).
      def parameters_schema
        Tool.schema_of(declared_parameters)
      end

      # tool.rb:279: the model's arguments checked against execute's keywords (tool_call:
      # aside), tool_call: handed on when execute declares it.
      def call(args, tool_call: nil)
        args = Tool.checked(self, args, [:tool_call])
        return args if args.key?(:error)

        keywords = method(:execute).parameters
        args[:tool_call] = tool_call if keywords.any? { |kind, n| n == :tool_call && %i[key keyreq].include?(kind) }
        execute(**args)
      end
    else
      def parameters
        self.class.parameters
      end

      if LINE == "1.16"
        def provider_params
          self.class.provider_params
        end

        # 1.16 tool.rb:91, from the parameters.
        def params_schema
          Tool.schema_of(parameters)
        end
      end

      # 1.16 tool.rb:106 (checked since 1.13; 1.0-1.12 called execute straight away).
      def call(args)
        args = Tool.checked(self, args, [])
        return args if args.key?(:error)

        execute(**args)
      end
    end

    def execute(...)
      raise NotImplementedError, "Subclasses must implement #execute"
    end

    # SchemaDefinition.from_parameters.
    def self.schema_of(parameters)
      return nil if parameters.empty?

      { "type" => "object",
        "properties" => parameters.to_h { |n, p| [n.to_s, { "type" => p.type.to_s, "description" => p.description }.compact] },
        "required" => parameters.select { |_, p| p.required }.keys.map(&:to_s),
        "additionalProperties" => false, "strict" => true }
    end

    # normalize_args and validate_keyword_arguments: symbol keys; a missing or unknown keyword
    # is the model's error, not an exception.
    def self.checked(tool, args, aside)
      args = args.respond_to?(:transform_keys) ? args.transform_keys(&:to_sym) : {}
      keywords = tool.method(:execute).parameters.reject { |_, n| aside.include?(n) }
      required = keywords.filter_map { |kind, n| n if kind == :keyreq }
      optional = keywords.filter_map { |kind, n| n if kind == :key }
      return args if required.empty? && optional.empty? && keywords.any? { |kind, _| %i[req opt rest].include?(kind) }

      missing = (required - args.keys).first
      return { error: "Invalid tool arguments: missing keyword: #{missing}" } if missing
      return args if keywords.any? { |kind, _| kind == :keyrest }

      unknown = (args.keys - required - optional).first
      unknown ? { error: "Invalid tool arguments: unknown keyword: #{unknown}" } : args
    end
  end

  ToolCall = Struct.new(:id, :name, :arguments, keyword_init: true)
  Message = Struct.new(:role, :content, :tool_calls, :tool_call_id, keyword_init: true)

  # The model: answers the messages with the next of the script's Messages (each a block given
  # the chat's messages and the tools as the provider declared them).
  class Provider
    attr_reader :declarations

    def initialize(*script)
      @script = script
      @declarations = []
    end

    def complete(messages, tools)
      @declarations = tools.values.map { |t| Provider.declaration(t) }
      step = @script.shift or raise "the script has no more answers"
      step.call(messages, @declarations)
    end

    # lib/ruby_llm/protocols/chat_completions/tools.rb:30 tool_for (2.0), and
    # providers/openai/tools.rb in 1.x: the schema, with what the tool adds for the provider.
    def self.declaration(tool)
      schema = case LINE
               when "2.0" then tool.parameters_schema || Tool.schema_of(tool.declared_parameters)
               when "1.16" then tool.params_schema || Tool.schema_of(tool.parameters)
               else # 1.8: one property per parameter
                 { "type" => "object",
                   "properties" => tool.parameters.to_h { |n, p| [n.to_s, { "type" => p.type.to_s, "description" => p.description }] },
                   "required" => tool.parameters.select { |_, p| p.required }.keys.map(&:to_s) }
               end
      declaration = { type: "function", function: { name: tool.name, description: tool.description, parameters: schema } }
      extra = case LINE
              when "2.0" then tool.provider_options
              when "1.16" then tool.provider_params
              else {}
              end
      declaration.merge(extra)
    end
  end

  # lib/ruby_llm/chat.rb.
  class Chat
    attr_reader :tools, :messages

    def initialize(provider)
      @provider = provider
      @tools = {}
      @messages = []
    end

    # chat.rb:303 with_tools (1.16 chat.rb:58 with_tool): a class is instantiated, the
    # instance filed under its name.
    def with_tools(*tools)
      tools.flatten.compact.each do |tool|
        instance = tool.is_a?(Class) ? tool.new : tool
        @tools[instance.name.to_sym] = instance
      end
      self
    end

    # The agentic loop: tool calls run and their results go back until the model answers.
    def ask(text)
      @messages << Message.new(role: :user, content: text)
      loop do
        response = @provider.complete(@messages, @tools)
        @messages << response
        return response unless response.tool_calls&.any?

        response.tool_calls.each_value { |tool_call| add_tool_result(tool_call, execute_tool(tool_call)) }
      end
    end

    private

    # chat.rb:1193 execute_tool (1.16 chat.rb:389): no rescue, an exception ends the chat.
    def execute_tool(tool_call)
      tool = @tools[tool_call.name.to_sym]
      return { error: "Model tried to call unavailable tool `#{tool_call.name}`" } unless tool

      LINE == "2.0" ? tool.call(tool_call.arguments, tool_call: tool_call) : tool.call(tool_call.arguments)
    end

    # chat.rb:1186 add_tool_result_message, Tool.split_result (1.16 chat.rb:381: to_s).
    def add_tool_result(tool_call, result)
      content = LINE == "2.0" ? Tool.split_result(result).first : result.to_s
      @messages << Message.new(role: :tool, content: content, tool_call_id: tool_call.id)
    end
  end
end
