# frozen_string_literal: true

# codecell's Ruby guest prelude (DESIGN §5). Loaded by the interpreter inside the sandbox with
# the control socket on fd 3: says "ready", receives one "exec", evaluates the code at top
# level and answers with one "result" frame. Everything here is internal; the guest's code
# sees only the SB module.

require "io/wait"
require "json"

# Host RPC, the seed's SB contract. SB.call blocks until the host answers.
module SB
  class ToolError < StandardError; end
  class UnknownTool < ToolError; end
  class RpcUnavailable < StandardError; end

  class << self
    def call(name, args = nil, **kwargs)
      answer(CodecellGuest.rpc(name, call_args(name, args, kwargs)))
    end

    # Calls made in the block run at once on the host (up to the cell's tool_concurrency):
    # SB.parallel { |p| p.call("a"); p.call("b") } is their answers, in the order of the calls.
    # Each p.call returns a future whose #value is its answer once parallel has returned. A
    # failed call raises its SB::ToolError from parallel, after every call has finished.
    def parallel
      batch = Parallel.new
      yield batch
      replies = CodecellGuest.rpc_all(batch.calls)
      batch.futures.zip(replies) { |future, reply| future.settle(reply) }
      batch.futures.each { |future| future.value } # the first failure, in order, raises
      batch.futures.map(&:value)
    end

    # The full signature of a tool, as the description would show it (docs/tools.md).
    def describe(name)
      call("$describe", name: name)
    end

    def call_args(name, args, kwargs)
      unless name.is_a?(String) && !name.empty?
        raise ArgumentError, "tool name must be a non-empty String, got #{name.inspect}"
      end

      merged = args.nil? ? {} : args
      raise TypeError, "tool arguments must be a Hash, got #{merged.class}" unless merged.is_a?(Hash)

      kwargs.empty? ? merged : merged.merge(kwargs)
    end

    def answer(reply)
      return reply["result"] if reply["ok"]

      error = reply["error"].is_a?(Hash) ? reply["error"] : {}
      klass = error["class"] == "SB::UnknownTool" ? UnknownTool : ToolError
      raise klass, error["message"].to_s
    end
  end

  # The calls of one SB.parallel block: recorded as they are made, sent together when the
  # block ends.
  class Parallel
    attr_reader :calls, :futures

    def initialize
      @calls = []
      @futures = []
    end

    def call(name, args = nil, **kwargs)
      merged = SB.call_args(name, args, kwargs)
      CodecellGuest.check_json!(merged, "args")
      @calls << [name, merged]
      (@futures << Future.new).last
    end
  end

  # One call of SB.parallel; its #value is the answer (or raises the call's error).
  class Future
    def settle(reply)
      @reply = reply
    end

    def value
      raise ToolError, "the call has not run yet: a future's value is known once SB.parallel " \
                       "has returned" unless defined?(@reply)

      SB.answer(@reply)
    end

    def inspect
      defined?(@reply) ? "#<SB::Future #{@reply["ok"] ? "answered" : "failed"}>" : "#<SB::Future pending>"
    end
  end

  # The modules of the MCP servers' tools: SB::MCP::Memory.create_entities(...).
  module MCP; end
end

# The protocol side, kept out of the guest's way.
module CodecellGuest
  MAX_BACKTRACE = 20
  MAX_MESSAGE = 100_000 # characters of an exception's message
  # Levels of arrays and objects in a value, one inside the other ([[1]] is 2): the engine's
  # one rule for run values, tool arguments and tool answers (docs/results.md).
  MAX_DEPTH = 200
  TOO_DEEP = "nested deeper than #{MAX_DEPTH} levels of arrays and objects (the limit)".freeze
  PRELUDE_PATH = "/codecell/"
  BOOT_FRAME = "-e:"
  FILENAME = "sandbox" # the script's name: __FILE__, $0, backtraces
  UTF_8 = Encoding::UTF_8
  # Methods taken from Kernel and Module before guest code runs: they work on any object,
  # BasicObject included, whatever the object's class redefines.
  CLASS_OF = Kernel.instance_method(:class)
  INSPECT = Kernel.instance_method(:inspect)
  MODULE_NAME = Module.instance_method(:name)
  MODULE_INSPECT = Module.instance_method(:inspect)
  GENERIC_TO_JSON = JSON::Ext::Generator::GeneratorMethods::Object
  DEFINE_SINGLETON = Kernel.instance_method(:define_singleton_method)
  RESPOND_TO = Kernel.instance_method(:respond_to?)
  RPC_LOCK = Thread::Mutex.new
  MAX_INTERRUPTS = 10 # reported with one result; more are counted in the last

  class TooDeep < StandardError; end

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
      # A reply's answer is at most MAX_DEPTH levels, inside the frame's own object.
      JSON.parse(body.force_encoding(UTF_8), max_nesting: MAX_DEPTH + 1)
    end

    # Threads' calls run one at a time (docs/tools.md): threads queue on the lock, each gets
    # its own answer. SB.parallel sends its calls together (rpc_all).
    def rpc(name, args)
      check_json!(args, "args")
      lock_rpc
      begin
        exchange(name, args)
      ensure
        RPC_LOCK.unlock
      end
    end

    # A trap handler runs on the main thread, which may be inside a call (it cannot wait for
    # itself), and may not wait for a lock at all: it calls only when no call is in flight.
    def lock_rpc
      if RPC_LOCK.owned?
        raise SB::ToolError, "SB.call from a signal handler that interrupted another SB.call " \
                             "of the same thread: the host answers one call at a time; call " \
                             "tools outside the handler"
      end

      RPC_LOCK.lock
    rescue ThreadError # trap context
      return if RPC_LOCK.try_lock

      raise SB::ToolError, "SB.call from a signal handler while another thread's SB.call is " \
                           "in flight: a handler cannot wait for it; call tools outside the handler"
    end

    # The calls of SB.parallel ([name, args] each, checked), all sent before any answer is
    # read: the host runs them at once. Their replies, in the order of the calls; replies come
    # in any order, each matched by its id.
    def rpc_all(calls)
      return [] if calls.empty?

      lock_rpc
      begin
        frames = calls.map { |name, args| call_frame(name, args) }
        frames.each { |frame| control.write([frame.bytesize].pack("N"), frame) }
        ids = (@rpc_id - calls.size + 1..@rpc_id)
        replies = {}
        while replies.size < calls.size
          reply = read_frame
          raise SB::RpcUnavailable, "the host closed the tool channel" if reply.nil?
          unless reply.is_a?(Hash) && reply["t"] == "reply" && reply["id"].is_a?(Integer)
            raise SB::RpcUnavailable, "unexpected answer from the host"
          end
          # An answer to an earlier call whose thread was killed while it waited is skipped.
          replies[reply["id"]] = reply if ids.cover?(reply["id"])
        end
        ids.map { |id| replies[id] }
      ensure
        RPC_LOCK.unlock
      end
    end

    # A call frame's text, under a fresh id (@rpc_id).
    def call_frame(name, args)
      @rpc_id = (@rpc_id || 1) + 1
      # The arguments as text (checked by check_json!): the host reads integers of any size
      # there, where a frame's own members hold 64 bits.
      args_json = begin
        JSON.generate(args, max_nesting: false)
      rescue JSON::GeneratorError, EncodingError => e # what check_json! did not foresee
        raise TypeError, "#{NOT_JSON}: #{e.message}"
      end
      JSON.generate({ t: "call", id: @rpc_id, name: text(name), args_json: args_json })
    end

    def exchange(name, args)
      frame = call_frame(name, args)
      id = @rpc_id
      control.write([frame.bytesize].pack("N"), frame)
      reply = nil
      loop do
        reply = read_frame
        raise SB::RpcUnavailable, "the host closed the tool channel" if reply.nil?
        # The answer to an earlier call whose thread was killed while it waited.
        break unless reply.is_a?(Hash) && reply["id"].is_a?(Integer) && reply["id"] < id
      end
      unless reply.is_a?(Hash) && reply["t"] == "reply" && reply["id"] == id
        raise SB::RpcUnavailable, "unexpected answer from the host"
      end

      reply
    end

    # Tool arguments are JSON data, nothing else (json's generic to_json would quietly turn any
    # object into its to_s). What JSON cannot carry (NaN, Infinity, text that is not valid
    # UTF-8, a key that is not text, any other object) or what is nested deeper than the host
    # takes is the seed's TypeError, raised before anything is sent.
    def check_json!(value, path, depth = 0)
      if (Array === value || Hash === value) && depth >= MAX_DEPTH
        not_json!(path, "is #{TOO_DEEP}")
      end

      case value
      when nil, true, false, Integer then nil
      when String, Symbol then not_json!(path, "is #{NOT_UTF_8}") unless json_text?(value)
      when Float
        not_json!(path, "is #{value}, which JSON cannot carry") unless value.finite?
      when Array then value.each_with_index { |item, i| check_json!(item, "#{path}[#{i}]", depth + 1) }
      when Hash then check_json_object!(value, path, depth)
      else
        not_json!(path, "is a #{class_name(value)}")
      end
    end

    def check_json_object!(value, path, depth)
      value.each do |key, item|
        not_json!(path, "has a #{class_name(key)} key") unless String === key || Symbol === key
        not_json!(path, "has a key that is #{NOT_UTF_8}: #{key.inspect[0, 80]}") unless json_text?(key)
        check_json!(item, "#{path}[#{key.inspect}]", depth + 1)
      end
      return if value.keys.map(&:to_s).uniq.size == value.size

      not_json!(path, "has a key twice (a String and a Symbol alike)")
    end

    NOT_JSON = "rpc arguments must be JSON-serializable"
    NOT_UTF_8 = "text that is not valid UTF-8"

    def not_json!(path, what)
      raise TypeError, "#{NOT_JSON}: #{path.length > 200 ? "#{path[0, 200]}…" : path} #{what}"
    end

    # Whether json can write it: text that is, or converts to, valid UTF-8 (json reads a binary
    # String's bytes as UTF-8).
    def json_text?(value)
      s = Symbol === value ? value.to_s : value
      return s.valid_encoding? if s.encoding == UTF_8
      return String.new(s).force_encoding(UTF_8).valid_encoding? if s.encoding == Encoding::BINARY

      s.valid_encoding? && s.encode(UTF_8).valid_encoding?
    rescue EncodingError
      false
    end

    # A String that is valid UTF-8: invalid bytes become U+FFFD, as the engine does with
    # output; other encodings are converted.
    def text(value)
      s = String === value ? String.new(value) : String.new(value.to_s)
      s.force_encoding(UTF_8) if s.encoding == Encoding::BINARY || s.encoding == Encoding::US_ASCII
      s = s.encode(UTF_8, invalid: :replace, undef: :replace, replace: "\uFFFD") unless s.encoding == UTF_8
      s.valid_encoding? ? s : s.scrub("\uFFFD")
    end

    # The value as exact JSON text: the engine writes it into the result as it is (Float#to_s
    # is the shortest form that reads back to the same double; integers have any size).
    def value_json(value)
      JSON.generate(plain(value, 0), max_nesting: false)
    rescue TooDeep
      raise JSON::NestingError, "the value is #{TOO_DEEP}"
    rescue Exception # rubocop:disable Lint/RescueException -- a to_json that raises, exits…
      JSON.generate(safe_inspect(value))
    end

    def plain(value, depth)
      raise TooDeep if (Array === value || Hash === value) && depth >= MAX_DEPTH

      case value
      when nil, true, false, Integer then value
      when String then text(value)
      # JSON has no NaN or Infinity: a tagged object, the same as Python's ("NaN",
      # "Infinity", "-Infinity" are Float#to_s).
      when Float then value.finite? ? value : { "$float" => value.to_s }
      when Symbol then text(value.to_s)
      when Array then value.map { |item| plain(item, depth + 1) }
      when Hash
        # Keys that JSON writes alike (1 and "1", :a and "a") would lose a pair: its inspect.
        data = value.to_h { |key, item| [key.nil? ? "null" : text(key), plain(item, depth + 1)] }
        data.size == value.size ? data : safe_inspect(value)
      else
        # Objects with a to_json of their own give it (read back, so that what reaches the
        # engine is JSON whatever that method returns); the rest their inspect.
        generic = !(Object === value) || value.method(:to_json).owner == GENERIC_TO_JSON
        generic ? safe_inspect(value) : own_json(value, depth)
      end
    end

    def own_json(value, depth)
      plain(JSON.parse(value.to_json, max_nesting: false), depth) # in the object's place
    rescue TooDeep
      raise
    rescue Exception # rubocop:disable Lint/RescueException -- a to_json that raises or exits
      safe_inspect(value)
    end

    def safe_inspect(value)
      inspected = Object === value ? value.inspect : INSPECT.bind_call(value)
      text(inspected)
    rescue Exception # rubocop:disable Lint/RescueException -- too deep, raising, exiting
      "#<#{class_name(value)}>"
    end

    def class_name(value)
      klass = CLASS_OF.bind_call(value)
      text(MODULE_NAME.bind_call(klass) || MODULE_INSPECT.bind_call(klass))
    rescue Exception # rubocop:disable Lint/RescueException
      "Object"
    end

    def message_of(exception)
      message = text(exception.message)
      return message if message.length <= MAX_MESSAGE

      "#{message[0, MAX_MESSAGE]}… (#{message.length - MAX_MESSAGE} more characters)"
    rescue Exception # rubocop:disable Lint/RescueException -- a message that raises
      "<exception message failed>"
    end

    # Frames of the guest's code (and the libraries it called), never the prelude's or those
    # of the boot program (guest/ruby/boot.rb, run as `ruby -e`).
    def guest_backtrace(exception)
      frames = Exception.instance_method(:backtrace).bind_call(exception) || []
      frames.map { |frame| text(frame) }.reject do |frame|
        frame.start_with?(PRELUDE_PATH, BOOT_FRAME)
      end.first(MAX_BACKTRACE)
    rescue Exception # rubocop:disable Lint/RescueException
      []
    end

    def error_of(exception)
      if SystemExit === exception
        status = exception.status
        return { ok: true, value_json: "null", exit_status: 0 } if status.zero?

        message = message_of(exception)
        message = message == "exit" ? "exit status #{status}" : "#{message} (exit status #{status})"
        return { ok: false, exit_status: status,
                 error: { "class" => class_name(exception), "message" => message,
                          "backtrace" => guest_backtrace(exception) } }
      end
      { ok: false, error: { "class" => class_name(exception), "message" => message_of(exception),
                            "backtrace" => guest_backtrace(exception) } }
    rescue Exception # rubocop:disable Lint/RescueException -- defeats every guard above
      { ok: false, error: { "class" => "Exception", "message" => "<exception could not be read>",
                            "backtrace" => [] } }
    end

    # The guest's code alone takes exceptions from other threads (Thread#raise, #kill, exit,
    # signals) as they come; the prelude around it defers them (see serve).
    def evaluate(code, display_limits = {})
      value = with_guest_sigint do
        Thread.handle_interrupt(Object => :immediate) { TOPLEVEL_BINDING.eval(code, FILENAME, 1) }
      end
      add_display({ ok: true, value_json: value_json(value) }, value, display_limits)
    rescue Exception => e # rubocop:disable Lint/RescueException -- every failure is reported
      error_of(e)
    end

    # ---- rich values ------------------------------------------------------------------------
    # What the last value says it looks like, by codecell's Ruby convention (docs/results.md,
    # "Rich values"): public methods to_markdown, to_html, to_svg (Strings) and to_png (bytes),
    # beside its plain value. Each is the guest's code: one that raises, runs too long or
    # returns what is not a String is left out, and a note says so; the run goes on.
    DISPLAY_METHODS = { "markdown" => :to_markdown, "html" => :to_html, "svg" => :to_svg,
                        "png" => :to_png }.freeze
    DISPLAY_SECONDS = 2.0 # for all of one value's methods together
    MAX_DISPLAY_NOTE = 300
    PLAIN_DATA = [NilClass, TrueClass, FalseClass, Integer, Float, String, Symbol, Array, Hash].freeze

    # Not a StandardError: a guest's bare `rescue` cannot swallow it.
    class DisplayTimeout < Exception; end # rubocop:disable Lint/InheritException

    def display_note(kind, what)
      note = text("#{kind}: #{what}")
      note.length <= MAX_DISPLAY_NOTE ? note : "#{note[0, MAX_DISPLAY_NOTE - 1]}…"
    end

    # Kernel's respond_to?, whatever the value's class redefines (a delegator's
    # respond_to_missing? still counts): asked before any timer is made, so that a value with
    # none of the methods costs no thread.
    def display_methods(value)
      return [] unless Object === value && PLAIN_DATA.none? { |k| k === value }

      DISPLAY_METHODS.select { |_kind, name| RESPOND_TO.bind_call(value, name) }
    rescue Exception # rubocop:disable Lint/RescueException -- a respond_to_missing? that raises
      []
    end

    # One kind's data; nil: none; raises ArgumentError saying why it is not one.
    def display_one(value, kind, name)
      data = Thread.handle_interrupt(Object => :immediate) { value.public_send(name) }
      return nil if data.nil?
      raise ArgumentError, "returned #{class_name(data)}, not a String" unless String === data

      kind == "png" ? String.new(data).b : text(data)
    end

    def display_of(value, limits)
      methods = display_methods(value)
      return [{}, []] if methods.empty?

      max_chars = (limits["max_chars"] || 20_000).to_i
      max_bytes = (limits["max_bytes"] || 4 << 20).to_i
      shown = {}
      notes = []
      with_display_deadline do
        methods.each do |kind, name|
          data = begin
            display_one(value, kind, name)
          rescue DisplayTimeout
            notes << display_note(kind, "#{name} ran over #{format("%g", DISPLAY_SECONDS)} s")
            break
          rescue Exception => e # rubocop:disable Lint/RescueException -- the guest's method
            notes << display_note(kind, "#{name} failed: #{class_name(e)}: #{message_of(e)}")
            nil
          end
          next if data.nil?

          if kind == "png"
            if data.bytesize > max_bytes
              notes << display_note(kind, "#{data.bytesize} bytes, over the #{max_bytes}-byte limit")
              next
            end
            data = [data].pack("m0")
          elsif data.length > max_chars
            notes << display_note(kind, "cut at #{max_chars} of #{data.length} characters")
            data = data[0, max_chars]
          end
          shown[kind] = data
        end
      end
      [shown, notes]
    end

    # The guest's methods may take DISPLAY_SECONDS in all. The timer raises into this thread,
    # which takes it only inside a method (display_one): the prelude around them defers
    # interrupts (serve). A timer thread inherits that mask, so it is made where interrupts
    # are immediate, or it could not be killed before its sleep ends; a raise that came after
    # the last method is taken here, never left for the next exec's code.
    def with_display_deadline
      main = Thread.current
      timer = Thread.handle_interrupt(Object => :immediate) do
        Thread.new do
          sleep DISPLAY_SECONDS
          main.raise(DisplayTimeout.new)
        end
      end
      yield
    ensure
      timer&.kill
      timer&.join
      begin
        Thread.handle_interrupt(DisplayTimeout => :immediate) { nil } while Thread.pending_interrupt?(DisplayTimeout)
      rescue DisplayTimeout
        nil
      end
    end

    def add_display(out, value, limits)
      shown, notes = begin
        display_of(value, limits.is_a?(Hash) ? limits : {})
      rescue Exception => e # rubocop:disable Lint/RescueException
        [{}, [display_note("display", "failed: #{class_name(e)}")]]
      end
      # Never the reason the result frame goes over the engine's limit: the largest forms go
      # first, until the rest fits.
      room = ((limits.is_a?(Hash) && limits["max_frame_bytes"]) || (16 << 20)).to_i -
             out[:value_json].bytesize - 65_536
      while !shown.empty? && JSON.generate(shown).bytesize > room
        kind = shown.keys.max_by { |k| JSON.generate(shown[k]).bytesize }
        notes << display_note(kind, "left out: the result would be over frame_bytes")
        shown.delete(kind)
      end
      out[:display] = shown unless shown.empty?
      out[:display_notes] = notes.first(10) unless notes.empty?
      out
    end

    # A cell's zygote (docs/security.md, "Forked sandboxes"): takes the engine's orders and
    # forks a sandbox for each, as /codecell/zygote.so directs (the fork is Ruby's own, so
    # that Ruby renews what it must in a child); comes back only in each sandbox's interpreter,
    # behind its walls, which then goes on as any sandbox's.
    def become_a_sandbox_of_the_zygote
      require "fiddle"
      lib = Fiddle.dlopen("/codecell/zygote.so")
      # Made once: nothing the loop allocates makes pages the next fork has to copy.
      z = %w[start next parent guest].to_h do |name|
        args = name == "parent" ? [Fiddle::TYPE_INT] : []
        [name, Fiddle::Function.new(lib["codecell_zygote_#{name}"], args, Fiddle::TYPE_INT)]
      end
      exit!(3) unless z["start"].call.zero?
      loop do
        z["next"].call
        guest = begin
          fork
        rescue SystemCallError
          -1 # said to the engine; the zygote goes on
        end
        break unless guest

        z["parent"].call(guest)
      end
      z["guest"].call
      ENV.delete("CODECELL_ZYGOTE")
      Random.srand
    end

    # One "exec" after another, all in the same top-level binding: a one-shot sandbox is
    # ended by the engine after its first result, a session's kernel lives on.
    def run
      become_a_sandbox_of_the_zygote if ENV["CODECELL_ZYGOTE"]
      # Output reaches the engine as it is written, so progress reports can show the last line.
      $stdout.sync = true
      # The code runs as a script named FILENAME: `main if __FILE__ == $0` holds.
      $0 = FILENAME
      send_frame({ t: "ready", runtime: "ruby", version: RUBY_VERSION })
      # A session's threads may raise into the main thread, kill it or signal the process
      # between evals, while the prelude waits or answers: deferred here, such an exception
      # is taken at the next exec and said in its result, and the session keeps its state.
      Thread.handle_interrupt(Object => :never) { serve }
    end

    def serve
      note_sigints
      loop do
        frame = next_exec
        exit!(0) if frame.nil? # the engine is gone
        exit!(2) unless frame.is_a?(Hash) && frame["t"] == "exec"

        # Before any of the code runs: an engine that finds this kernel dead without it knows
        # the code never ran, and may run it on a fresh one.
        send_frame({ t: "taken", id: frame["id"] })

        interrupts = take_interrupts
        apply_input(frame)
        refused = write_files_guarded(frame["files"])
        bind_tools(frame["bindings"]) if frame["bindings"].is_a?(Hash)
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        images = frame["images"].is_a?(Hash) ? frame["images"] : {}
        before = folder_state(images["folder"])
        out = refused ? files_refused(refused) : evaluate(frame["code"].to_s, frame["display"] || {})
        files_out = frame["files_out"].is_a?(Hash) ? frame["files_out"] : {}
        hand_back_folder(frame["id"], images, files_out, before)
        out[:duration_ms] = ((Process.clock_gettime(Process::CLOCK_MONOTONIC) - started) * 1000).round(2)
        # Output written before the result belongs to this execution: flush it first.
        flush_output
        out[:idle_interrupts] = interrupts unless interrupts.empty?
        answer(frame["id"], out)
      end
    end

    # Ruby's SIGINT handler raises Interrupt at once, deferred or not: outside the guest's code
    # a handler that only notes it stands in (a handler of the guest's own stays).
    NOTE_SIGINT = proc { CodecellGuest.note_interrupt(Interrupt.new("SIGINT")) }

    def note_sigints
      was = trap("INT", NOTE_SIGINT)
      trap("INT", was) unless was == "DEFAULT"
    end

    # Ruby's own SIGINT handler while the guest's code runs, unless a thread of the guest's set
    # another meanwhile.
    def with_guest_sigint
      was = trap("INT", "DEFAULT")
      trap("INT", was) unless was.equal?(NOTE_SIGINT)
      yield
    ensure
      note_sigints
    end

    # The next frame from the engine. Waiting is safe to interrupt (a guest's own trap that
    # raises): nothing is read yet. One that raises mid-frame leaves the channel out of step,
    # so the kernel ends (the engine then says the session's state was lost).
    def next_exec
      loop do
        frame = next_frame
        # The answer to a call whose caller gave up waiting, sent before the engine took the
        # result (docs/tools.md): nobody waits for it any more.
        return frame unless frame.is_a?(Hash) && frame["t"] == "reply"
      end
    end

    def next_frame
      begin
        control.wait_readable
      rescue Exception => e # rubocop:disable Lint/RescueException -- a guest's trap raised
        note_interrupt(e)
        retry
      end
      begin
        read_frame
      rescue Exception => e # rubocop:disable Lint/RescueException
        note_interrupt(e)
        exit!(2)
      end
    end

    def note_interrupt(exception)
      (@interrupts ||= []) << exception
    end

    # What reached the main thread since the last result, as {class, message}: the deferred
    # exceptions, taken now (a thread that raises without end cannot hold the exec back), and
    # the SIGINTs noted.
    def take_interrupts
      taken = @interrupts || []
      @interrupts = nil
      100.times do
        break unless Thread.pending_interrupt?

        begin
          Thread.handle_interrupt(Object => :immediate) { Thread.pass }
        rescue Exception => e # rubocop:disable Lint/RescueException -- this is what we take
          taken << e
        end
      end
      said = taken.map { |e| { "class" => class_name(e), "message" => interrupt_message(e) } }
      return said if said.size <= MAX_INTERRUPTS

      said.first(MAX_INTERRUPTS - 1) << { "class" => "CodecellGuest::Interrupts",
                                          "message" => "#{said.size - MAX_INTERRUPTS + 1} more" }
    end

    def interrupt_message(exception)
      return message_of(exception) unless SystemExit === exception

      "#{message_of(exception)} (exit status #{exception.status})"
    rescue Exception # rubocop:disable Lint/RescueException
      "<exception message failed>"
    end

    # The files written to the cell's output folder go to the engine as "file" frames before
    # the result; the engine checks their bytes (a picture among them joins the images) and
    # caps again.

    # {name => [mode, size, mtime, inode]} of the entries of the folder, read without
    # following links, to tell what a run wrote or changed.
    def folder_state(folder)
      return {} unless folder

      Dir.children(folder).each_with_object({}) do |name, state|
        st = File.lstat(File.join(folder, name))
        state[name] = [st.mode, st.size, st.mtime.to_r, st.ino] unless st.directory?
      rescue SystemCallError
        next
      end
    rescue SystemCallError
      {}
    end

    # The engine's word for an entry that is not read: it words the note itself.
    def kind_of(st)
      return "link" if st.symlink?
      return "fifo" if st.pipe?
      return "device" if st.chardev? || st.blockdev?
      return "socket" if st.socket?

      "other"
    end

    # [bytes, nil] of a regular file, at most cap + 1 of them, or [nil, kind]. The code may
    # still run in another process and swap the file for a link or a FIFO after the folder was
    # listed: NOFOLLOW refuses the link, NONBLOCK keeps the open of a FIFO from waiting for a
    # writer, and the stat of what was opened judges it.
    def read_capped(path, cap)
      File.open(path, File::RDONLY | File::NOFOLLOW | File::NONBLOCK) do |f|
        st = f.stat
        next [nil, kind_of(st)] unless st.file?

        data = +""
        while data.bytesize <= cap
          chunk = f.read([cap + 1 - data.bytesize, 1 << 20].min)
          break if chunk.nil? || chunk.empty?

          data << chunk
        end
        [data, nil]
      end
    rescue Errno::ELOOP
      [nil, "link"]
    rescue SystemCallError, IOError
      [nil, "changed"]
    end

    # Every entry the run wrote or changed, as a "file" frame: its bytes when they fit the
    # caps, else only why not. The prelude's caps only keep frames small and few.
    def hand_back_folder(id, images, files_out, before)
      folder = images["folder"]
      return unless folder

      cap = [[images["max_bytes"].to_i, files_out["max_bytes"].to_i].max,
             (files_out["read_bytes"] || (1 << 62)).to_i].min
      room = images["max"].to_i + files_out["max"].to_i
      folder_state(folder).sort.each do |name, state|
        next if before[name] == state

        # A name that is not UTF-8 cannot go into a frame as it is.
        frame = { t: "file", id: id, name: name.dup.force_encoding(UTF_8).scrub("\uFFFD") }
        st = File.lstat(File.join(folder, name)) rescue nil # rubocop:disable Style/RescueModifier
        if st.nil? || !st.file?
          frame[:kind] = st ? kind_of(st) : "changed"
        elsif room <= 0
          frame[:kind] = "count"
        elsif state[1] > cap
          frame[:size] = state[1]
        else
          data, kind = read_capped(File.join(folder, name), cap)
          if kind
            frame[:kind] = kind
          elsif data.bytesize > cap
            frame[:size] = data.bytesize
          else
            frame[:data] = [data].pack("m0")
            room -= 1
          end
        end
        send_frame(frame)
      end
    rescue Exception # rubocop:disable Lint/RescueException -- never the end of the run
      nil
    end

    # What the caller gave the run besides its code: arguments, variables, and stdin, which
    # becomes fd 0 through a file in /tmp (unlinked at once, so the code never sees it).
    def apply_input(frame)
      ARGV.replace(frame["argv"]) if frame["argv"].is_a?(Array)
      frame["env"].each { |name, value| ENV[name] = value } if frame["env"].is_a?(Hash)
      return unless frame["stdin_b64"].is_a?(String)

      path = "/tmp/.codecell-stdin-#{Process.pid}"
      File.binwrite(path, frame["stdin_b64"].unpack1("m"))
      $stdin.reopen(path, "rb")
      File.unlink(path)
    end

    # The run's files (codecell_run_options.files), written into /work before its code. The
    # engine checked their names; what a session's earlier code left on their way (a link, a
    # FIFO, a file where a folder is needed) is never followed: the run is refused, naming it.
    # Returns that refusal, or nil.
    # write_files, which a session's earlier code may have broken (File.lstat redefined, /work
    # made unreadable, a timer left to fire): whatever it raises refuses the eval, and the
    # session lives on.
    def write_files_guarded(files)
      write_files(files)
    rescue Exception => e # rubocop:disable Lint/RescueException -- the guest's doing
      begin
        "the files could not be written: #{class_name(e)}: #{message_of(e)}"
      rescue Exception # rubocop:disable Lint/RescueException
        "the files could not be written"
      end
    end

    def write_files(files)
      return nil unless files.is_a?(Array)

      files.each_with_index do |entry, i|
        name = entry["name"].to_s
        parts = name.split("/")
        dir = "/work"
        parts[0...-1].each_with_index do |part, k|
          dir = File.join(dir, part)
          where = "files[#{i}] (#{name.inspect}): /work/#{parts[0..k].join("/")}"
          begin
            Dir.mkdir(dir, 0o755)
          rescue Errno::EEXIST
            nil
          rescue SystemCallError => e
            return "#{where} cannot be made: #{e.message}"
          end
          return "#{where} is not a folder (a link or a file, never followed)" unless File.lstat(dir).directory?
        end
        problem = write_file(File.join(dir, parts[-1]), entry["b64"].to_s.unpack1("m"),
                             "files[#{i}] (#{name.inspect}): /work/#{name}")
        return problem if problem
      end
      nil
    end

    # data into the regular file at path: never through a link, never into a FIFO or a device
    # (opened without blocking, checked before a byte is written).
    def write_file(path, data, where)
      flags = File::WRONLY | File::CREAT | File::NOFOLLOW | File::NONBLOCK | File::BINARY
      File.open(path, flags, 0o644) do |f|
        return "#{where} is not a regular file (a FIFO, a device or a folder): remove it first" unless f.stat.file?

        f.truncate(0)
        f.write(data)
      end
      nil
    rescue Errno::ELOOP
      "#{where} is a symbolic link (never followed): remove it first"
    rescue Errno::ENXIO, Errno::EISDIR # a FIFO no one reads, a folder
      "#{where} is not a regular file (a FIFO, a device or a folder): remove it first"
    rescue Errno::ENOSPC, Errno::EFBIG, Errno::EDQUOT
      "#{where}: /work is full (the cell's work_bytes)"
    rescue SystemCallError, IOError => e
      "#{where} cannot be written: #{e.message}"
    end

    def files_refused(problem)
      { ok: false, error: { "class" => "CodecellGuest::FilesError", "message" => problem, "backtrace" => [] } }
    end

    # The MCP servers' tools as module methods (docs/tools.md): for {"memory" =>
    # {"create_entities" => "memory.create_entities"}}, Memory.create_entities(**args) is
    # SB.call("memory.create_entities", **args). The module is SB::MCP::Memory, and Memory at
    # top level unless the name is taken (a server named "file" does not touch File).
    def bind_tools(bindings)
      bindings.each do |server, tools|
        next unless server.is_a?(String) && tools.is_a?(Hash)

        const = server.gsub(/(?:\A|_)([a-z0-9])/) { ::Regexp.last_match(1).upcase }
        mod = SB::MCP.const_defined?(const, false) ? SB::MCP.const_get(const, false) : SB::MCP.const_set(const, Module.new)
        tools.each do |method, full|
          # Kernel's own method: a tool named define_singleton_method cannot stop the others.
          DEFINE_SINGLETON.bind_call(mod, method) { |args = nil, **kwargs| SB.call(full, args, **kwargs) }
        end
        Object.const_set(const, mod) unless Object.const_defined?(const, false)
      end
    rescue StandardError
      nil # a binding that cannot be made leaves SB.call, which always works
    end

    # Never the end of a session: a result that cannot be sent is replaced by a plain error.
    def answer(id, out)
      send_frame({ t: "result", id: id }.merge(out))
    rescue Exception # rubocop:disable Lint/RescueException
      send_frame({ t: "result", id: id, ok: false,
                   error: { "class" => "CodecellGuest::ResultError",
                            "message" => "the result could not be sent", "backtrace" => [] } })
    end

    def flush_output
      $stdout.flush
      $stderr.flush
    rescue Exception # rubocop:disable Lint/RescueException
      nil
    end
  end
end

CodecellGuest.run
