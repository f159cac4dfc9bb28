# frozen_string_literal: true

module CodeCell
  # Reads a Marshal stream from a jailed block before Marshal.load sees it. The block ran code
  # the caller does not trust; had that code taken over its process, the bytes it hands back
  # are the attacker's, and Marshal.load of chosen bytes runs code (an object's marshal_load or
  # _load, a hash key's #hash). So only plain data loads: nil, booleans, numbers, strings,
  # symbols, arrays, hashes, regexps, and objects of the classes below or of those the caller
  # names in CodeCell.configure { |c| c.trusted_classes << Point }.
  module MarshalCheck
    # Core classes whose loading runs no code but their own.
    SAFE_CLASSES = %w[Time Range Rational Complex Set Date DateTime BigDecimal Encoding].freeze
    MAX_DEPTH = 2000

    class Refused < StandardError; end

    class << self
      # Raises Refused naming the first class that is not trusted; returns the bytes.
      def check!(bytes, trusted = [])
        names = SAFE_CLASSES + trusted.map { |c| c.is_a?(Module) ? c.name : c.to_s }
        Reader.new(bytes, names).read_stream
        bytes
      end
    end

    # One pass over the stream, as Marshal.load would take it, without making anything.
    class Reader
      def initialize(bytes, trusted)
        @s = bytes.b
        @at = 0
        @trusted = trusted
        @symbols = []
      end

      def read_stream
        raise Refused, "not a Marshal 4.8 stream" unless @s.byteslice(0, 2) == "\x04\x08".b

        @at = 2
        value(0)
        raise Refused, "bytes after the value" unless @at == @s.bytesize
      end

      private

      def byte
        b = @s.getbyte(@at) or raise Refused, "truncated"
        @at += 1
        b
      end

      def skip(n)
        raise Refused, "truncated" if n.negative? || @at + n > @s.bytesize

        @at += n
      end

      def long
        c = byte
        c -= 256 if c > 127
        return 0 if c.zero?
        return c - 5 if c > 4
        return c + 5 if c < -4

        n = 0
        c.abs.times { |i| n |= byte << (8 * i) }
        c.negative? ? n - (1 << (8 * c.abs)) : n
      end

      def symbol
        case byte.chr
        when ":"
          len = long
          skip(len)
          @symbols << @s.byteslice(@at - len, len)
          @symbols.last
        when ";"
          @symbols.fetch(long) { raise Refused, "bad symbol link" }
        when "I" # a symbol with an encoding
          name = symbol
          long.times { symbol && value(1) }
          name
        else
          raise Refused, "a symbol expected"
        end
      end

      def class_name
        name = symbol
        return name if @trusted.include?(name)

        raise Refused, "it holds a #{name}, which is not loaded unless trusted " \
                       "(CodeCell.configure { |c| c.trusted_classes << #{name} })"
      end

      def ivars(depth)
        long.times do
          symbol
          value(depth)
        end
      end

      def value(depth)
        raise Refused, "nested deeper than #{MAX_DEPTH}" if depth > MAX_DEPTH

        d = depth + 1
        case byte.chr
        when "0", "T", "F" then nil
        when "i", "@" then long
        when ":" then @at -= 1; symbol
        when ";" then @at -= 1; symbol
        when '"', "f" then skip(long)
        when "l" then byte; skip(long * 2)
        when "/" then skip(long); byte
        when "I" then value(d); ivars(d)
        when "[" then long.times { value(d) }
        when "{" then long.times { value(d); value(d) }
        when "}" then long.times { value(d); value(d) }; value(d)
        when "o", "S" then class_name; ivars(d)
        when "u" then class_name; skip(long)
        when "U", "C", "d" then class_name; value(d)
        when "e" then class_name; value(d)
        when "c", "m", "M" then refuse_module
        else raise Refused, "an unknown type"
        end
      end

      def refuse_module
        len = long
        skip(len)
        name = @s.byteslice(@at - len, len)
        raise Refused, "it holds a #{name}, which is not loaded unless trusted" unless @trusted.include?(name)
      end
    end
  end
end
