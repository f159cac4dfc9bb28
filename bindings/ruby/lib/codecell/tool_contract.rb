# frozen_string_literal: true

module CodeCell
  # What RubyLLM's chat and providers read from a tool, for a CodeCell::Tool made before RubyLLM
  # was loaded (so not a RubyLLM::Tool): RubyLLM's Chat takes any object that answers these
  # (with_tools instantiates a class and files the instance under #name), so such a tool still
  # works in a chat. The names are those of every RubyLLM release: 1.0-1.8 read #parameters (a
  # Hash of parameters with type, description, required), 1.9-1.16 #params_schema and
  # #provider_params, the 2.0 line #parameters_schema, #declared_parameters, #provider_options,
  # #requires_approval? and #approval_resolver, and it calls call(args, tool_call:).
  module ToolContract
    Parameter = Struct.new(:name, :type, :description, :required)

    # RubyLLM's Tool#call: the arguments of a model's call (a Hash, string or symbol keys)
    # checked against #execute's keywords, a missing or unknown one answered as RubyLLM does;
    # options (tool_call:) go on to #execute.
    def call(args, **options)
      args = args.respond_to?(:transform_keys) ? args.transform_keys(&:to_sym) : {}
      return { error: "Invalid tool arguments: missing keyword: code" } unless args.key?(:code)

      unknown = (args.keys - [:code]).first
      return { error: "Invalid tool arguments: unknown keyword: #{unknown}" } if unknown

      execute(**args, **options)
    end

    # The one parameter, as RubyLLM declares parameters.
    def parameters
      { code: Parameter.new(:code, "string", self.class.code_description, true) }
    end
    alias declared_parameters parameters

    def parameters_schema
      input_schema
    end
    alias params_schema parameters_schema

    # Nothing provider-specific to merge into the tool's declaration.
    def provider_options
      {}
    end
    alias provider_params provider_options

    def requires_approval?
      false
    end

    def approval_resolver
      nil
    end
  end
end
