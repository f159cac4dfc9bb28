# frozen_string_literal: true

require "codecell/jail_errors"
require "codecell/marshal_check"

module CodeCell
  class << self
    # Runs the block in a forked child behind codecell's walls (docs/jail.md) and returns its
    # value, passed back with Marshal; raises TimeoutError, MemoryError, FilesystemError,
    # SandboxError (the block raised), UnsupportedPlatformError or Error. The seed agent_jail's
    # AgentJail.run, with its option names and defaults; keep_open: IO objects (or fds) the
    # block may use as they are, every other descriptor pointing at /dev/null in the child.
    def jail(timeout: nil, cpu_timeout: nil, memory_mb: nil, fs_allow: nil, fs_read_allow: [],
             network: false, keep_open: [], &block)
      raise ArgumentError, "CodeCell.jail needs a block" unless block

      cfg = configuration
      limits = Jail.limits(timeout || cfg.default_timeout, cpu_timeout, memory_mb || cfg.default_memory_mb)
      fds = Jail.descriptors(keep_open)
      unless Process.respond_to?(:fork)
        Jail.unsupported("fork is not available on #{RUBY_ENGINE}", cfg.on_unsupported)
        return block.call
      end
      native = Jail.prepare(limits, fs_allow || cfg.default_fs_allow, fs_read_allow, network, cfg.on_unsupported,
                            fds)
      begin
        pid = Process.fork { Jail.keeper(native, block) }
        Jail.interpret(native.wait(pid), limits, cfg.trusted_classes)
      ensure
        native.close
      end
    end

    # The walls a jail with these options would have on this host, as CodeCell.jail would make
    # them ("landlock_abi_6", "cgroup_v2" or "rlimit_as", "idmapped_fs_allow",
    # "inside_another_jail" …); nothing runs. Raises as CodeCell.jail would under :raise.
    def jail_layers(fs_allow: nil, fs_read_allow: [], network: false)
      cfg = configuration
      limits = Jail.limits(cfg.default_timeout, nil, cfg.default_memory_mb)
      native = Jail.prepare(limits, fs_allow || cfg.default_fs_allow, fs_read_allow, network, cfg.on_unsupported, [])
      begin
        native.layers
      ensure
        native.close
      end
    end
  end

  # The pieces of CodeCell.jail.
  module Jail
    # A block's error travels as this hash of strings (MarshalCheck lets nothing else through).
    ERROR_KEYS = %w[class message backtrace].freeze
    # Errors of Ruby's own path operations ("Permission denied @ rb_sysopen - /etc/shadow")
    # that mean "this path is not yours": Landlock's refusal, or the file's owner's.
    FILESYSTEM_ERRNOS = [Errno::EACCES, Errno::EPERM, Errno::EROFS].freeze
    PATH_OPERATION = / @ \w+ - /.freeze

    @warned = {}
    @warned_lock = Mutex.new

    class << self
      def limits(timeout, cpu_timeout, memory_mb)
        [["timeout", timeout], ["cpu_timeout", cpu_timeout], ["memory_mb", memory_mb]].each do |name, v|
          next if v.nil? && name == "cpu_timeout"
          raise ArgumentError, "#{name} must be a positive number, got #{v.inspect}" unless v.is_a?(Numeric) && v.positive?
        end
        { timeout: timeout, cpu_timeout: cpu_timeout || timeout, memory_mb: memory_mb }
      end

      def prepare(limits, fs_allow, fs_read_allow, network, on_unsupported, fds)
        policy = Native::POLICIES.fetch(on_unsupported) do
          raise ArgumentError, "on_unsupported must be :warn, :raise or :ignore, got #{on_unsupported.inspect}"
        end
        native = Native::Jail.new((limits[:timeout] * 1000).ceil, (limits[:cpu_timeout] * 1000).ceil,
                                  (limits[:memory_mb] * 1024 * 1024).ceil, paths(fs_allow, "fs_allow"),
                                  paths(fs_read_allow, "fs_read_allow") + runtime_paths,
                                  network ? true : false, policy, fds)
        native.warnings.each { |w| warn_once(w) }
        native
      end

      # The seed's implicit read-only paths (the C library grants them).
      SYSTEM = %w[/usr /lib /lib64 /proc /dev /etc /run/systemd].freeze

      # Ruby's own installation (its library folders) and the gem homes, read-only, so that a
      # file the block requires late is found wherever this Ruby and its gems are installed, as
      # the seed's system paths do for a Ruby under /usr. Not the rest of $LOAD_PATH: a folder
      # of the application's own (its root, with its secrets) is granted only by fs_read_allow.
      def runtime_paths
        key = Gem.path.hash
        return @runtime_paths[1] if @runtime_paths&.first == key

        @runtime_paths = [key, find_runtime_paths]
        @runtime_paths[1]
      end

      def find_runtime_paths
        dirs = (%w[rubylibprefix rubyarchprefix sitedir vendordir].map { |k| RbConfig::CONFIG[k] } + Gem.path)
               .compact.select { |d| File.directory?(d) }.map { |d| File.realpath(d) }.uniq
        kept = dirs.reject { |d| inside?(d, SYSTEM) }
        kept.reject { |d| inside?(d, kept - [d]) }
      end

      def inside?(dir, roots)
        roots.any? { |r| dir == r || dir.start_with?("#{r.chomp("/")}/") }
      end

      def paths(list, name)
        Array(list).map do |p|
          p = p.to_path if p.respond_to?(:to_path)
          raise TypeError, "#{name}: #{p.inspect} is not a path" unless p.is_a?(String)

          p
        end
      end

      # keep_open's descriptors: an IO (a File, a Socket, anything with #to_io) that is open, or
      # an Integer the library checks is open.
      def descriptors(list)
        raise TypeError, "keep_open must be an Array of IO objects or descriptors" unless list.is_a?(Array)

        list.map do |io|
          next io if io.is_a?(Integer)
          raise TypeError, "keep_open: #{io.inspect} is not an IO or a descriptor" unless io.respond_to?(:to_io)

          io = io.to_io
          raise ArgumentError, "keep_open: #{io.inspect} is closed" if io.closed?

          io.fileno
        end
      end

      # The seed's on_unsupported for a Ruby without fork.
      def unsupported(reason, policy)
        case policy
        when :raise then raise UnsupportedPlatformError, reason
        when :warn then warn_once("#{reason}; the block runs unsandboxed")
        end
      end

      # Each missing layer is told once per process, not at every call.
      def warn_once(message)
        first = @warned_lock.synchronize { @warned[message] ? false : (@warned[message] = true) }
        warn "[CodeCell] WARNING: #{message}" if first
      end

      # The child: makes the namespaces, forks the jailed process and stays outside as its
      # reaper. Never returns.
      def keeper(native, block)
        native.enter_namespaces
        pid = begin
          Process.fork { jailed(native, block) }
        rescue SystemCallError
          nil
        end
        native.keep(pid)
      ensure
        exit!(1) # only on a Ruby exception: never the caller's at_exit handlers in a child
      end

      # The jailed process: never returns.
      def jailed(native, block)
        native.enter_walls
        outcome, bytes = run_block(block)
        native.answer(Native::Jail::ANSWERS.fetch(outcome), bytes)
        exit!(0)
      rescue Exception # rubocop:disable Lint/RescueException
        exit!(1) # no answer: the parent reports a crash
      end

      def run_block(block)
        value = block.call
        # A value Marshal cannot dump (a Proc, an IO) raises here, in the child, as the seed's
        # Pipe.write_result does: a SandboxError wrapping that TypeError.
        [:value, Marshal.dump(value)]
      rescue NoMemoryError => e
        [:memory, dump_exception(e)]
      rescue Exception => e # rubocop:disable Lint/RescueException
        [filesystem?(e) ? :filesystem : :raised, dump_exception(e)]
      end

      def filesystem?(error)
        FILESYSTEM_ERRNOS.any? { |k| error.is_a?(k) } && PATH_OPERATION.match?(error.message)
      end

      def dump_exception(error)
        message = begin
          error.message.to_s
        rescue StandardError
          "(its message raised)"
        end
        dump_error(error.class.name || error.class.inspect, message, Array(error.backtrace).map(&:to_s))
      end

      def dump_error(klass, message, backtrace)
        Marshal.dump(ERROR_KEYS.zip([klass.to_s, message.to_s, backtrace]).to_h)
      end

      # In the parent: the value, or the exception the outcome calls for.
      def interpret(r, limits, trusted)
        case r[:outcome]
        when :value then load_value(r[:data], trusted)
        when :raised then raise_from(load_error(r[:data]))
        when :filesystem then raise FilesystemError, load_error(r[:data])["message"]
        when :memory
          raise MemoryError, "the block exceeded its #{limits[:memory_mb]} MB memory limit"
        when :timeout
          if r[:cpu]
            raise TimeoutError.new("the block exceeded its #{limits[:cpu_timeout]} s CPU time limit", cpu: true)
          end
          raise TimeoutError, "the block exceeded its #{limits[:timeout]} s wall-clock timeout"
        else crashed(r)
        end
      end

      def load_value(data, trusted)
        MarshalCheck.load(data, trusted)
      rescue MarshalCheck::Refused => e
        raise Error, "the block's value cannot be loaded here: #{e.message}"
      end

      def load_error(data)
        h = MarshalCheck.load(data)
        raise Error, "the block's error came back malformed" unless h.is_a?(Hash) && h.keys.sort == ERROR_KEYS.sort

        h
      rescue MarshalCheck::Refused => e
        raise Error, "the block's error came back malformed: #{e.message}"
      end

      def raise_from(h)
        raise SandboxError.new(original_class: h["class"], original_message: h["message"],
                               original_backtrace: h["backtrace"])
      end

      def crashed(r)
        if r[:signal].positive?
          name = Signal.signame(r[:signal]) || r[:signal].to_s
          raise SandboxError.new(original_class: "SignalException",
                                 original_message: "the block's process was killed by SIG#{name}",
                                 original_backtrace: [])
        end
        raise SandboxError.new(original_class: "SystemExit",
                               original_message: "the block's process exited (status #{r[:exit_code]}) " \
                                                 "without an answer",
                               original_backtrace: [])
      end
    end
  end
end
