# frozen_string_literal: true

require "fiddle"

# The seed agent_jail's AgentJail.run (seed 003: runner.rb, child.rb, pipe.rb,
# restrictions/landlock.rb, ffi/setrlimit.rb, ffi/landlock.rb, platform.rb), step by step with
# its defaults (timeout 30 s, 512 MB, fs_allow [], fs_read_allow []), for bench/jail.rb to
# measure CodeCell.jail against. The one difference: the system calls go through Fiddle (in
# Ruby's standard library) where the gem uses the ffi gem, which Debian's Ruby lacks; both bind
# libc's syscall/prctl/setrlimit once at load and make a small struct per call.
module SeedJail
  WHAT = "pipe, fork; in the child RLIMIT_CPU, /proc/version read, Landlock ABI 1 ruleset over " \
         "the 7 system paths (open each, add rule, no_new_privs, restrict_self), RLIMIT_AS, " \
         "the block, Marshal.dump of {status:, value:}; in the parent a monitor thread, read to " \
         "EOF, waitpid2, monitor kill + join, Marshal.load"
  LIBC = Fiddle.dlopen(nil)
  SYSCALL = Fiddle::Function.new(LIBC["syscall"], [Fiddle::TYPE_LONG, Fiddle::TYPE_VARIADIC], Fiddle::TYPE_LONG)
  PRCTL = Fiddle::Function.new(LIBC["prctl"], [Fiddle::TYPE_INT] + [Fiddle::TYPE_LONG] * 4, Fiddle::TYPE_INT)
  SETRLIMIT = Fiddle::Function.new(LIBC["setrlimit"], [Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP], Fiddle::TYPE_INT)
  CLOSE = Fiddle::Function.new(LIBC["close"], [Fiddle::TYPE_INT], Fiddle::TYPE_INT)
  SYSTEM_READ_PATHS = %w[/usr /lib /lib64 /proc /dev /etc /run/systemd].freeze
  ALL_ACCESS_FS = (1 << 13) - 1 # ABI 1's thirteen rights
  READ_ONLY = (1 << 2) | (1 << 3)
  READ_WRITE = READ_ONLY | (1 << 1) | (1 << 5) | (1 << 8) | (1 << 7)

  module_function

  def run(timeout: 30, memory_mb: 512, fs_allow: [], fs_read_allow: [], &block)
    read, write = IO.pipe
    pid = fork do
      read.close
      child(write, timeout, memory_mb, fs_allow, fs_read_allow, block)
      exit!(0)
    end
    write.close
    monitor = Thread.new do
      sleep(timeout)
      Process.kill(:KILL, pid)
    rescue Errno::ESRCH
      nil
    end
    raw = read.read
    _pid, status = Process.waitpid2(pid)
    monitor.kill
    monitor.join
    read.close
    result = raw.empty? ? nil : Marshal.load(raw) # rubocop:disable Security/MarshalLoad
    raise "the seed's child ended without an answer: #{status.inspect}" unless result
    raise "#{result[:class]}: #{result[:message]}" unless result[:status] == :ok

    result[:value]
  end

  def child(write, cpu_timeout, memory_mb, fs_allow, fs_read_allow, block)
    rlimit(0, cpu_timeout) # RLIMIT_CPU first
    landlock(fs_allow, fs_read_allow) if landlock_supported?
    rlimit(9, memory_mb * 1024 * 1024) # RLIMIT_AS last: Landlock's set-up allocates
    begin
      write.write(Marshal.dump({ status: :ok, value: block.call }))
    rescue Exception => e # rubocop:disable Lint/RescueException
      write.write(Marshal.dump({ status: :error, class: e.class.name, message: e.message,
                                 backtrace: e.backtrace }))
    ensure
      write.close
    end
  end

  def rlimit(resource, value)
    limit = Fiddle::Pointer.malloc(16, Fiddle::RUBY_FREE)
    limit[0, 16] = [value, value].pack("QQ")
    SETRLIMIT.call(resource, limit)
  end

  # platform.rb: the kernel's version from /proc/version, at every run.
  def landlock_supported?
    m = File.read("/proc/version").match(/Linux version (\d+\.\d+)/)
    (m ? Gem::Version.new(m[1]) : Gem::Version.new("0.0")) >= Gem::Version.new("5.13")
  end

  def landlock(fs_allow, fs_read_allow)
    attr = Fiddle::Pointer.malloc(8, Fiddle::RUBY_FREE)
    attr[0, 8] = [ALL_ACCESS_FS].pack("Q")
    fd = SYSCALL.call(444, Fiddle::TYPE_VOIDP, attr, Fiddle::TYPE_SIZE_T, 8, Fiddle::TYPE_INT, 0)
    raise "landlock_create_ruleset failed: #{fd}" if fd.negative?

    (SYSTEM_READ_PATHS + fs_read_allow).each { |p| add_rule(fd, p, READ_ONLY) }
    fs_allow.each { |p| add_rule(fd, p, READ_WRITE) }
    PRCTL.call(38, 1, 0, 0, 0) # PR_SET_NO_NEW_PRIVS
    SYSCALL.call(446, Fiddle::TYPE_INT, fd, Fiddle::TYPE_INT, 0)
    CLOSE.call(fd)
  end

  def add_rule(ruleset, path, access)
    return unless File.exist?(path)

    File.open(path) do |f|
      attr = Fiddle::Pointer.malloc(12, Fiddle::RUBY_FREE)
      attr[0, 12] = [access, f.fileno].pack("Ql") # packed: __u64 then __s32
      SYSCALL.call(445, Fiddle::TYPE_INT, ruleset, Fiddle::TYPE_INT, 1, Fiddle::TYPE_VOIDP, attr,
                   Fiddle::TYPE_INT, 0)
    end
  rescue Errno::ENOENT, Errno::ENOTDIR, Errno::EACCES
    nil
  end
end
