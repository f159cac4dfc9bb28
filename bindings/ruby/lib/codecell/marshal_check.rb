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
    # The values a stream may hold, links included: loading makes each (F1, issue 18).
    MAX_NODES = 10_000_000
    # The bytes of the strings, floats, big integers and regexps that links repeat: a link is a
    # few bytes of the stream, and hashing or copying its target costs the target's length.
    MAX_LINKED_BYTES = 64 << 20
    # Hash keys inside hash keys: inserting a key hashes all of it, so a value inside k keys is
    # hashed k times.
    MAX_KEY_NESTING = 16
    # The instance variables a string or regexp carries for its encoding.
    ENCODING_IVARS = %w[E encoding].freeze

    class Refused < StandardError; end

    class << self
      # Raises Refused naming the first class that is not trusted; returns the bytes.
      def check!(bytes, trusted = [])
        names = SAFE_CLASSES + trusted.map { |c| c.is_a?(Module) ? c.name : c.to_s }
        Reader.new(bytes, names).read_stream
        bytes
      end

      # check! then Marshal.load; whatever either raises on bad bytes (a stack too deep, no
      # memory, a format error) is Refused, so a bad answer is always the caller's one error.
      def load(bytes, trusted = [])
        check!(bytes, trusted)
        Marshal.load(bytes)
      rescue Refused
        raise
      rescue StandardError, SystemStackError, NoMemoryError => e
        raise if defined?(Timeout::Error) && e.is_a?(Timeout::Error) # the caller's own, from outside

        raise Refused, "#{e.class}: #{e.message}"
      end
    end

    # One pass over the stream, as Marshal.load would take it, without making anything. It
    # numbers the objects as Marshal.load does, so that a link (@) is let through only to a
    # string, float, big integer or regexp (a leaf): the value is a tree, never a graph whose
    # loading hashes a shared subtree once per path to it.
    class Reader
      def initialize(bytes, trusted)
        @s = bytes.b
        @at = 0
        @trusted = trusted
        @symbols = []
        @objects = [] # per object number: the leaf's byte length, or :node (never linked)
        @nodes = 0
        @linked = 0
        @keys = 0
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
        n
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

      # As Marshal's r_symbol: one "I" (the name's encoding follows) before a new name; Marshal
      # writes no other, so more are refused rather than followed.
      def symbol(depth)
        case byte.chr
        when ":" then new_symbol
        when ";" then @symbols.fetch(long) { raise Refused, "bad symbol link" }
        when "I"
          raise Refused, "a symbol expected" unless byte.chr == ":"

          name = new_symbol
          ivars(depth + 1)
          name
        else
          raise Refused, "a symbol expected"
        end
      end

      def new_symbol
        len = long
        skip(len)
        @symbols << @s.byteslice(@at - len, len)
        @symbols.last
      end

      def class_name(depth)
        name = symbol(depth)
        return name if @trusted.include?(name)

        raise Refused, "it holds a #{name}, which is not loaded unless trusted " \
                       "(CodeCell.configure { |c| c.trusted_classes << #{name} })"
      end

      # Reads the instance variables; true when they are only an encoding.
      def ivars(depth)
        raise Refused, "nested deeper than #{MAX_DEPTH}" if depth > MAX_DEPTH

        plain = true
        long.times do
          plain = false unless ENCODING_IVARS.include?(symbol(depth))
          value(depth)
        end
        plain
      end

      # Gives the next object its number, as Marshal's r_entry does.
      def entry(kind)
        @objects << kind
        @objects.size - 1
      end

      def link
        size = @objects.fetch(long) { raise Refused, "bad object link" }
        unless size.is_a?(Integer)
          raise Refused, "it holds the same array, hash or object twice (an object link), " \
                         "which is not loaded: the value must be a tree"
        end
        @linked += size
        raise Refused, "its links repeat more than #{MAX_LINKED_BYTES} bytes" if @linked > MAX_LINKED_BYTES
      end

      def key(depth)
        @keys += 1
        raise Refused, "hash keys nested deeper than #{MAX_KEY_NESTING}" if @keys > MAX_KEY_NESTING

        value(depth)
        @keys -= 1
      end

      def value(depth)
        raise Refused, "nested deeper than #{MAX_DEPTH}" if depth > MAX_DEPTH
        raise Refused, "more than #{MAX_NODES} values" if (@nodes += 1) > MAX_NODES

        d = depth + 1
        case byte.chr
        when "0", "T", "F" then nil
        when "i" then long
        when "@" then link
        when ":", ";" then @at -= 1; symbol(d)
        when '"', "f" then entry(skip(long))
        when "l" then byte; entry(skip(long * 2))
        when "/" then entry(skip(long)); byte
        when "I" then with_ivars(d)
        when "[" then entry(:node); long.times { value(d) }
        when "{" then entry(:node); long.times { key(d); value(d) }
        when "}" then entry(:node); long.times { key(d); value(d) }; value(d)
        when "o", "S" then entry(:node); class_name(d); ivars(d)
        when "u" then class_name(d); skip(long); entry(:node)
        when "U", "d" then class_name(d); entry(:node); value(d)
        when "C", "e" then class_name(d); wrapped(d)
        when "c", "m", "M" then refuse_module
        else raise Refused, "an unknown type"
        end
      end

      # "I": a value, then its instance variables. Marshal numbers a _load object (u) after
      # them, everything else before; one with more than an encoding is never linked.
      def with_ivars(depth)
        if @s.getbyte(@at) == "u".ord
          @at += 1
          class_name(depth)
          skip(long)
          ivars(depth)
          return entry(:node)
        end
        first = @objects.size
        value(depth)
        plain = ivars(depth)
        @objects[first] = :node if !plain && @objects.size > first
      end

      # A user class (C) or an extended object (e): the object inside is its first number,
      # and never linked.
      def wrapped(depth)
        first = @objects.size
        value(depth)
        @objects[first] = :node if @objects.size > first
      end
      def refuse_module
        len = long
        skip(len)
        name = @s.byteslice(@at - len, len)
        raise Refused, "it holds a #{name}, which is not loaded unless trusted" unless @trusted.include?(name)

        entry(:node)
      end
    end
  end
end
