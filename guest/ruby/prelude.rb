# frozen_string_literal: true

# codecell's Ruby guest prelude (DESIGN §5). Loaded by the interpreter inside the sandbox with
# the control socket on fd 3: says "ready", receives one "exec", evaluates the code at top
# level and answers with one "result" frame. Everything here is internal; the guest's code
# sees only the SB module.

require "json"

# Host RPC, the seed's SB contract. SB.call blocks until the host answers.
module SB
  class ToolError < StandardError; end
  class UnknownTool < ToolError; end
  class RpcUnavailable < StandardError; end

  class << self
    def call(name, args = nil, **kwargs)
      unless name.is_a?(String) && !name.empty?
        raise ArgumentError, "tool name must be a non-empty String, got #{name.inspect}"
      end

      merged = args.nil? ? {} : args
      unless merged.is_a?(Hash)
        raise TypeError, "tool arguments must be a Hash, got #{merged.class}"
      end

      merged = merged.merge(kwargs) unless kwargs.empty?
      reply = CodecellGuest.rpc(name, merged)
      return reply["result"] if reply["ok"]

      error = reply["error"].is_a?(Hash) ? reply["error"] : {}
      klass = error["class"] == "SB::UnknownTool" ? UnknownTool : ToolError
      raise klass, error["message"].to_s
    end
  end
end

# The protocol side, kept out of the guest's way.
module CodecellGuest
  MAX_BACKTRACE = 20
  PRELUDE_PATH = "/codecell/"
  BOOT_FRAME = "-e:"

  class << self
    def control
      @control ||= IO.for_fd(3, "r+b", autoclose: false).tap { |io| io.sync = true }
    end

    def send_frame(obj)
      body = JSON.generate(obj)
      control.write([body.bytesize].pack("N"), body)
    end

    def read_frame
      header = control.read(4)
      return nil if header.nil? || header.bytesize < 4

      body = control.read(header.unpack1("N"))
      JSON.parse(body.force_encoding(Encoding::UTF_8))
    end

    def rpc(name, args)
      check_json!(args, "args")
      @rpc_id = (@rpc_id || 1) + 1
      frame = JSON.generate({ t: "call", id: @rpc_id, name: name, args: args })
      control.write([frame.bytesize].pack("N"), frame)
      reply = read_frame
      raise SB::RpcUnavailable, "the host closed the tool channel" if reply.nil?
      unless reply["t"] == "reply" && reply["id"] == @rpc_id
        raise SB::RpcUnavailable, "unexpected answer from the host"
      end

      reply
    end

    # Tool arguments are JSON data, nothing else (json's generic to_json would quietly turn any
    # object into its to_s).
    def check_json!(value, path)
      case value
      when nil, true, false, String, Integer, Symbol then nil
      when Float
        raise TypeError, "tool arguments must be JSON: #{path} is #{value}" unless value.finite?
      when Array then value.each_with_index { |item, i| check_json!(item, "#{path}[#{i}]") }
      when Hash
        value.each do |key, item|
          unless key.is_a?(String) || key.is_a?(Symbol)
            raise TypeError, "tool arguments must be JSON: #{path} has a #{key.class} key"
          end

          check_json!(item, "#{path}[#{key.inspect}]")
        end
      else
        raise TypeError, "tool arguments must be JSON: #{path} is a #{value.class}"
      end
    end

    # Values must survive JSON; the round trip normalises what the host will read. Objects
    # with no JSON form of their own come back as their inspect string (json's generic
    # Object#to_json would give to_s, which says less); integers beyond 64 bits come back as
    # decimal strings, since JSON readers disagree on them.
    def jsonable(value)
      JSON.parse(JSON.generate(plain(value)))
    rescue StandardError, SystemStackError
      safe_inspect(value)
    end

    def plain(value)
      case value
      when nil, true, false, String, Float then value
      when Integer then value.bit_length < 64 ? value : value.to_s
      when Symbol then value.to_s
      when Array then value.map { |item| plain(item) }
      when Hash then value.to_h { |key, item| [key.is_a?(String) ? key : key.to_s, plain(item)] }
      else
        generic = value.method(:to_json).owner == JSON::Ext::Generator::GeneratorMethods::Object
        generic ? safe_inspect(value) : value
      end
    end

    def safe_inspect(value)
      value.inspect.to_s.encode("UTF-8", invalid: :replace, undef: :replace)
    rescue StandardError
      "#<#{value.class}>"
    end

    # Frames of the guest's code (and the libraries it called), never the prelude's or those
    # of the boot program (guest/ruby/boot.rb, run as `ruby -e`).
    def guest_backtrace(exception)
      frames = (exception.backtrace || []).reject do |frame|
        frame.start_with?(PRELUDE_PATH, BOOT_FRAME)
      end
      frames.first(MAX_BACKTRACE)
    rescue StandardError
      []
    end

    def evaluate(code)
      value = TOPLEVEL_BINDING.eval(code, "sandbox", 1)
      { ok: true, value: jsonable(value) }
    rescue Exception => e # rubocop:disable Lint/RescueException -- every failure is reported
      {
        ok: false,
        error: {
          "class" => e.class.name || e.class.inspect,
          "message" => e.message.to_s.encode("UTF-8", invalid: :replace, undef: :replace),
          "backtrace" => guest_backtrace(e)
        }
      }
    end

    # One "exec" after another, all in the same top-level binding: a one-shot sandbox is
    # ended by the engine after its first result, a session's kernel lives on.
    def run
      # Output reaches the engine as it is written, so progress reports can show the last line.
      $stdout.sync = true
      send_frame({ t: "ready", runtime: "ruby", version: RUBY_VERSION })
      loop do
        frame = read_frame
        exit!(0) if frame.nil? # the engine is gone
        exit!(2) unless frame.is_a?(Hash) && frame["t"] == "exec"

        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        out = evaluate(frame["code"].to_s)
        out[:duration_ms] = ((Process.clock_gettime(Process::CLOCK_MONOTONIC) - started) * 1000).round(2)
        # Output written before the result belongs to this execution: flush it first.
        flush_output
        send_frame({ t: "result", id: frame["id"] }.merge(out))
      end
    end

    def flush_output
      $stdout.flush
      $stderr.flush
    rescue StandardError
      nil
    end
  end
end

CodecellGuest.run
