# frozen_string_literal: true

module CodeCell
  # A host tool's answer as JSON text, by the rule a run's value follows inside the sandbox
  # (guest/ruby/prelude.rb, docs/results.md), so that what a block returns reads in the guest as
  # it would have read as a value there: JSON data as it is, NaN and the infinities tagged
  # ({"$float" => "NaN"}), invalid UTF-8 with U+FFFD, objects with a to_json of their own by it,
  # and everything else as its `inspect` (the seed's rule). json's generic to_json would give
  # `to_s` instead ("#<Object:0x…>" loses nothing, but a Struct or a Set would read as a bare
  # "#<struct …>" only by luck, and Time as a date the guest cannot tell from a String).
  module Answer
    MAX_DEPTH = 200 # the engine's one nesting rule (docs/results.md)
    GENERIC_TO_JSON = Object.new.method(:to_json).owner
    INSPECT = Kernel.instance_method(:inspect)

    class TooDeep < StandardError; end

    class << self
      def json(value)
        JSON.generate(plain(value, 0), max_nesting: false)
      rescue TooDeep
        raise TooDeep, "the answer is nested deeper than #{MAX_DEPTH} levels of arrays and objects (the limit)"
      end

      private

      def plain(value, depth)
        raise TooDeep if (value.is_a?(Array) || value.is_a?(Hash)) && depth >= MAX_DEPTH

        case value
        when nil, true, false, Integer then value
        when String, Symbol then text(value.to_s)
        when Float then value.finite? ? value : { "$float" => value.to_s }
        when Array then value.map { |item| plain(item, depth + 1) }
        when Hash
          data = value.to_h { |key, item| [key.nil? ? "null" : text(key.to_s), plain(item, depth + 1)] }
          # Keys that JSON writes alike (1 and "1", :a and "a") would lose a pair.
          data.size == value.size ? data : safe_inspect(value)
        else other(value, depth)
        end
      end

      def other(value, depth)
        return safe_inspect(value) if !(Object === value) || value.method(:to_json).owner == GENERIC_TO_JSON

        # Read back, so that a to_json that writes something else than JSON cannot reach the guest.
        begin
          data = JSON.parse(value.to_json, max_nesting: false)
        rescue StandardError
          return safe_inspect(value)
        end
        plain(data, depth)
      end

      def text(string)
        s = string.dup
        s.force_encoding(Encoding::UTF_8) if [Encoding::BINARY, Encoding::US_ASCII].include?(s.encoding)
        s = s.encode(Encoding::UTF_8, invalid: :replace, undef: :replace, replace: "\uFFFD") unless s.encoding == Encoding::UTF_8
        s.valid_encoding? ? s : s.scrub("\uFFFD")
      end

      def safe_inspect(value)
        text(Object === value ? value.inspect.to_s : INSPECT.bind_call(value))
      rescue StandardError, SystemStackError
        "#<#{Kernel.instance_method(:class).bind_call(value)}>"
      end
    end
  end
end
