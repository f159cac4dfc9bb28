# frozen_string_literal: true

module CodeCell
  # The input schema of a host tool given without one, read from what its block declares, so
  # that the model sees the arguments: `|city:, days: 1|` is
  #
  #   {"type" => "object", "properties" => {"city" => {}, "days" => {}},
  #    "required" => ["city"], "additionalProperties" => false}
  #
  # Ruby says nothing of a keyword's type, so each is any JSON value (give input_schema: for
  # types); a keyword without a default is required, and without `**rest` other keys are refused
  # by the engine before the block runs, as Ruby would refuse them. A block that takes the
  # arguments as one Hash (`|args|`), or nothing, says nothing of them: no schema.
  module BlockSchema
    def self.of(callable)
      params = callable.parameters
      keywords = params.select { |kind, _| %i[keyreq key].include?(kind) }
      return nil if keywords.empty?

      schema = { "type" => "object", "properties" => keywords.to_h { |_, name| [name.to_s, {}] } }
      required = keywords.filter_map { |kind, name| name.to_s if kind == :keyreq }
      schema["required"] = required unless required.empty?
      schema["additionalProperties"] = false if params.none? { |kind, _| kind == :keyrest }
      schema
    end
  end
end
