# frozen_string_literal: true

module CodeCell
  # A sandbox configuration and its warm pool: every #run is a fresh sandbox.
  #
  #   cell = CodeCell::Cell.new(language: :ruby, mounts: [{source: "data", dest: "/data"}])
  #   cell.run("1 + 1").value # => 2
  class Cell
    # The mount modes by name, and the spellings accepted for them.
    MODES = { ro: "ro", read_only: "ro", rw: "rw", read_write: "rw", exec: "exec" }.freeze

    attr_reader :language

    # Opens a cell, yields it and closes it.
    def self.open(**options)
      cell = new(**options)
      return cell unless block_given?

      begin
        yield cell
      ensure
        cell.close
      end
    end

    # language: :ruby or :python. mounts: Hashes with source:, dest:, and optionally mode:
    # (:ro, :rw, :exec) or read_write: true, and description:. timeout_ms, cpu_ms, memory
    # (bytes): the limits most often set; limits: any limit by its configuration-file name
    # (pids:, output_bytes:, tool_call_ms:, model_chars:, …). pool: sandboxes kept standing
    # by (0 starts every run cold). policy: :warn, :raise or :ignore for a missing optional
    # layer. tools: {name => callable}, {name => {description:, input_schema:, call:}} or
    # {name => a RubyLLM tool, class or instance} (bound as CodeCell::Tool's `tools` binds it).
    # network: {allow: [...], ...}: HTTP and HTTPS to those hosts only (docs/network.md).
    def initialize(language: :ruby, mounts: [], timeout_ms: nil, cpu_ms: nil, memory: nil,
                   pool: nil, limits: {}, tools: {}, policy: nil, output_folder: nil,
                   image_folder: nil, subprocesses: false, approve: nil, network: nil)
      @language = language.to_sym
      native_args = Cell.native_args(@language, mounts,
                                     { timeout_ms: timeout_ms, cpu_ms: cpu_ms,
                                       memory_bytes: memory }.compact.merge(limits),
                                     pool: pool, policy: policy, output_folder: output_folder,
                                     image_folder: image_folder, subprocesses: subprocesses,
                                     network: network)
      @native = Native::Cell.new(*native_args)
      @tool_blocks = [] # the Dispatcher holds them weakly
      ObjectSpace.define_finalizer(self, Cell.releaser(@native))
      tools.each do |name, spec|
        if Cell.rubyllm_tool?(spec)
          # RubyLLM's call(args, tool_call:) is not a block's: bound as a Tool binds one.
          HostTools.bind([], { name => spec }, taken: []).each do |t|
            tool(t.name, description: t.description, input_schema: t.input_schema, &t.block)
          end
        elsif spec.respond_to?(:call)
          tool(name, &(spec.is_a?(Proc) ? spec : spec.method(:call)))
        else
          tool(name, description: spec[:description], input_schema: spec[:input_schema],
                     approval: spec.fetch(:approval, false), &spec.fetch(:call))
        end
      end
      self.approve(&approve) if approve
      Sessions.register(self)
      yield self if block_given?
    end

    # A RubyLLM tool (class or instance) or a look-alike, which HostTools binds: it answers
    # `execute`, where a block or a callable answers `call` only.
    def self.rubyllm_tool?(spec)
      spec.is_a?(Class) ? spec.method_defined?(:execute) : spec.respond_to?(:execute)
    end

    # Registers a host tool the guest calls with SB.call(name, key: value) (Ruby) or
    # sb.call(name, key=value) (Python). The block gets the arguments as keywords when it
    # declares keywords, else the Hash; its value goes back as JSON; an exception it raises
    # becomes SB::ToolError in the guest. It runs on a Ruby thread of its own. Without
    # input_schema:, a block's keywords are its schema (BlockSchema: names, required or not).
    # approval: true marks the tool: each call first asks the cell's approve block (#approve).
    def tool(name, description: nil, input_schema: nil, approval: false, &block)
      raise ArgumentError, "tool #{name}: give a block" unless block

      input_schema ||= BlockSchema.of(block)
      key = Dispatcher.register(block)
      @native.add_tool(name.to_s, description&.to_s, input_schema && JSON.generate(input_schema), key.to_s)
      @tool_blocks << block
      require_approval(name) if approval
      self
    end

    # Marks the tool named: each of its calls waits for the approve block first.
    def require_approval(name)
      @native.require_approval(name.to_s)
      self
    end

    # The block asked before each call of a tool marked for approval, with the tool's name and
    # its arguments (a Hash), on a Ruby thread of its own while the guest waits (the run's clock
    # is stopped meanwhile). true lets the call run; a String declines it with that reason;
    # anything else, an exception, or no answer within the cell's approval_ms refuses it. A
    # refused call never runs its tool: the guest gets SB::ToolError ("approval declined: …").
    # Without a block, every marked call is refused with "approval needed".
    def approve(&block)
      unless block
        @native.set_approval(nil)
        return self
      end
      asked = ->(call) { block.call(call["tool"], call["args"]) }
      key = Dispatcher.register(asked)
      @tool_blocks << asked
      @native.set_approval(key.to_s)
      self
    end

    # Runs code in a fresh sandbox. Other Ruby threads go on meanwhile; an interrupt of this
    # thread (Ctrl-C, Thread#raise, #kill, Timeout) stops the run.
    #
    # As `codecell run` gives them: timeout_ms: this run's wall clock (it narrows the cell's
    # timeout, never widens it); stdin: (a String) what the code reads on its stdin; argv: (an
    # Array of Strings) its ARGV / sys.argv[1:]; env: ({name => value}) variables added to its
    # environment; on_output: (or a block) called with :stdout or :stderr and each piece of
    # output as the code writes it, on this thread; it must return quickly, and what it raises
    # cancels the run and is raised here.
    #
    # files: ({name => content}, both Strings; content's bytes as they are, binary or text) are
    # written into /work before the code starts, their folders made; names are relative paths
    # under /work. A bad name, too many files or too many bytes (the cell's files_in,
    # files_in_bytes and file_bytes limits) raise ArgumentError naming files[i] before anything
    # runs. In a session they stay in its /work.
    def run(code, timeout_ms: nil, stdin: nil, argv: nil, env: nil, on_output: nil, files: nil, &block)
      given = Cell.run_input(timeout_ms: timeout_ms, stdin: stdin, argv: argv, env: env,
                             on_output: on_output || block, files: files)
      Result.new(@native.run(code.to_s, given), @native.model_chars)
    end

    # The options Native::Cell#run and #session_eval take, checked (ArgumentError or TypeError
    # naming the option); nil when none is given.
    def self.run_input(timeout_ms: nil, stdin: nil, argv: nil, env: nil, on_output: nil, files: nil)
      given = {}
      unless timeout_ms.nil?
        raise TypeError, "timeout_ms: an Integer, not #{timeout_ms.inspect}" unless timeout_ms.is_a?(Integer)
        raise ArgumentError, "timeout_ms: #{timeout_ms} is not a positive number of milliseconds" unless timeout_ms.positive?

        given[:timeout_ms] = [timeout_ms, (1 << 32) - 1].min # more only ever gets the cell's limit
      end
      unless stdin.nil?
        raise TypeError, "stdin: a String, not #{stdin.class}" unless stdin.is_a?(String)

        given[:stdin] = stdin.b
      end
      unless argv.nil?
        raise TypeError, "argv: an Array of Strings, not #{argv.inspect}" unless argv.is_a?(Array) && argv.all?(String)

        given[:argv] = argv.map { |a| a.encode(Encoding::UTF_8) }
      end
      given[:env] = env_pairs(env) unless env.nil?
      given[:files] = file_pairs(files) unless files.nil?
      unless on_output.nil?
        raise TypeError, "on_output: #{on_output.inspect} does not answer #call" unless on_output.respond_to?(:call)

        given[:output] = on_output
      end
      given.empty? ? nil : given
    end

    def self.env_pairs(env)
      raise TypeError, "env: a Hash of names and values, not #{env.class}" unless env.is_a?(Hash)

      env.map do |name, value|
        name = name.to_s
        raise ArgumentError, "env: the name #{name.inspect} contains \"=\"" if name.include?("=")
        raise TypeError, "env: the value of #{name} is a #{value.class}, not a String" unless value.is_a?(String)

        "#{name}=#{value}"
      end
    end

    # [[name, content]] of the files: Hash, names in UTF-8 (a binary String's bytes as they are,
    # for the engine to check), contents as bytes. The names' rules are the engine's; here only
    # the types, and a NUL, which would cut a C string short.
    def self.file_pairs(files)
      raise TypeError, "files: a Hash of names and contents, not #{files.class}" unless files.is_a?(Hash)

      files.each_with_index.map do |(name, content), i|
        raise TypeError, "files[#{i}].name: a String, not #{name.inspect}" unless name.is_a?(String)
        raise TypeError, "files[#{i}].content: a String, not #{content.class}" unless content.is_a?(String)

        [file_name(name, i), content.b]
      end
    end

    def self.file_name(name, index)
      utf8 = name.encoding == Encoding::BINARY ? name.b : name.encode(Encoding::UTF_8)
      raise ArgumentError, "files[#{index}].name: #{name.inspect} contains a NUL character" if utf8.include?("\0")

      utf8
    rescue EncodingError => e
      raise ArgumentError, "files[#{index}].name: #{name.inspect} has no UTF-8 form (#{e.message})"
    end

    # The named session (created on first eval; "default" when unnamed). With a block: yields
    # it and closes it after.
    def session(name = DEFAULT_SESSION)
      s = Session.new(self, name)
      return s unless block_given?

      begin
        yield s
      ensure
        s.close
      end
    end

    # Runs code in the named session, as the seed's Repl#execute(code:, session:, reset:):
    # reset: true drops the session's state first. A result whose session had ended since the
    # last eval (killed, or by a thread of its own) says so in #state_lost. Takes #run's
    # timeout_ms:, stdin:, argv:, env:, files: (which stay in the session's /work) and on_output:
    # (or a block), for this eval.
    def eval(code, session: DEFAULT_SESSION, reset: false, **run_input, &block)
      given = Cell.run_input(**run_input.merge(on_output: run_input[:on_output] || block))
      session_close(session.to_s) if reset
      session_eval(session.to_s, code, given)
    end

    # Names of the sessions open now.
    def sessions
      @native.sessions
    end

    # Ends the named session's sandbox. True when one was open.
    def close_session(name = DEFAULT_SESSION)
      session_close(name.to_s)
    end

    # Parks the named session (docs/sessions.md, Parked sessions): its sandbox ends, its journal
    # stays, and its next eval restores its state (that result's #restored). Raises for one that
    # is not open or cannot be restored.
    def park_session(name = DEFAULT_SESSION)
      @native.session_park(name.to_s)
      nil
    end

    # A new session +name+ made from +source+: its first eval runs source's evals again (host
    # tools answered from the journal), then its own; source is untouched.
    def fork_session(source, name)
      @native.session_fork(source.to_s, name.to_s)
      nil
    end

    # Ends every session of the cell (the cell stays open). Returns how many were open.
    def close_all
      sessions.count { |name| session_close(name) }
    end

    # Fills the pool and returns when every sandbox in it is ready.
    def warmup
      @native.warmup
      self
    end

    # The description a model sees: how to use the cell, its folders, its tools.
    def description
      @native.description
    end

    def warnings
      @native.warnings
    end

    # language, pool_size, pool_ready, sessions_open, tools
    def info
      @native.info
    end

    # Frees the cell: every sandbox and session of it ends before this returns. A cell not
    # closed is closed when it is garbage-collected.
    def close
      return if @native.closed?

      @native.close
      Sessions.unregister(self)
      @tool_blocks.clear
      ObjectSpace.undefine_finalizer(self)
      nil
    end

    def closed?
      @native.closed?
    end

    # The arguments of Native::Cell.new and .check, from Ruby's spelling of a configuration.
    # output_folder: its files come back (Result#images, Result#files); image_folder is its
    # old name.
    def self.native_args(language, mounts, limits, pool: nil, policy: nil, output_folder: nil,
                         image_folder: nil, subprocesses: false, network: nil)
      if output_folder && image_folder
        raise ArgumentError, "output_folder and image_folder are one option (image_folder is its old name)"
      end

      output_folder ||= image_folder
      mounts = mounts.map { |m| native_mount(m) }
      limits = limits.map do |name, value|
        number = Native::LIMITS[name.to_sym] or raise ArgumentError, "unknown limit #{name.inspect} (known: #{Native::LIMITS.keys.join(", ")})"
        raise ArgumentError, "limit #{name}: #{value.inspect} is not a positive Integer" unless value.is_a?(Integer) && value.positive?

        [number, value]
      end
      options = { pool: pool, output_folder: output_folder&.to_s, subprocesses: subprocesses }
      if network
        raise ArgumentError, "network: #{network.inspect} is not a Hash" unless network.is_a?(Hash)

        options[:network] = JSON.generate(network) # the engine checks it whole (docs/network.md)
      end
      if policy
        options[:policy] = Native::POLICIES[policy.to_sym] or
          raise ArgumentError, "unknown policy #{policy.inspect} (known: warn, raise, ignore)"
      end
      [language.to_s, mounts, limits, options.compact]
    end

    def self.native_mount(mount)
      mount = mount.transform_keys(&:to_sym)
      unknown = mount.keys - %i[source dest mode read_write description]
      raise ArgumentError, "mount: unknown keys #{unknown.join(", ")}" unless unknown.empty?

      mode = mount[:read_write] ? :rw : (mount[:mode] || :ro)
      { source: mount.fetch(:source).to_s, dest: mount.fetch(:dest).to_s,
        mode: MODES.fetch(mode.to_sym) { raise ArgumentError, "mount #{mount[:dest]}: unknown mode #{mode.inspect}" },
        description: mount[:description]&.to_s }
    end

    # The finalizer: it must not hold the cell itself, or the cell would never be collected.
    def self.releaser(native)
      proc { native.close unless native.closed? }
    end

    private

    def session_eval(name, code, given = nil)
      Result.new(@native.session_eval(name, code.to_s, given), @native.model_chars)
    end

    def session_close(name)
      @native.session_close(name)
    end
  end
end
