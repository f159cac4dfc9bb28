# frozen_string_literal: true

require_relative "helper"
require "socket"
require "open3"
require "rbconfig"
require "tempfile"

# CodeCell.jail against the real kernel, as root and as nobody (tests/bindings/install.sh).
class TestJail < Minitest::Test
  include Helper

  def setup
    CodeCell.reset!
  end

  def teardown
    CodeCell.reset!
    # No process of a jail outlives its call.
    wait_until { descendants.zero? }
  end

  def root?
    Process.euid.zero?
  end

  # A folder the child may write: a root caller's child runs as nobody.
  def scratch
    dir = Dir.mktmpdir("codecell-jail")
    File.chmod(0o777, dir)
    yield dir
  ensure
    FileUtils.rm_rf(dir)
  end

  def test_value_with_a_closure_over_memory
    state = { "greeting" => "hello", "numbers" => [1, 2, 3] }
    counter = 41
    value = CodeCell.jail do
      state["numbers"] << 4
      counter += 1
      [state["greeting"], state["numbers"].sum, counter, Process.pid]
    end
    assert_equal ["hello", 10, 42, 1], value # PID 1 of its own pid namespace
    assert_equal [1, 2, 3], state["numbers"] # the child's changes stay in the child
    assert_equal 41, counter
    assert_equal({ a: [1.5, nil, true], "é" => :sym, r: 1..3, t: Time.at(0).utc, q: 2r },
                 CodeCell.jail { { a: [1.5, nil, true], "é" => :sym, r: 1..3, t: Time.at(0).utc, q: 2r } })
  end

  def test_a_raising_block_is_a_sandbox_error_with_the_original
    line = __LINE__ + 1
    error = assert_raises(CodeCell::SandboxError) { CodeCell.jail { raise ArgumentError, "bad input" } }
    assert_equal "ArgumentError", error.original_class
    assert_equal "bad input", error.original_message
    assert_match(/#{File.basename(__FILE__)}:#{line}/o, error.original_backtrace.first)
    assert_equal "ArgumentError: bad input", error.message
    assert_kind_of CodeCell::Error, error
    # a class the parent does not know
    error = assert_raises(CodeCell::SandboxError) do
      CodeCell.jail { raise Class.new(StandardError).tap { |c| Object.const_set(:JailOnly, c) }, "x" }
    end
    assert_equal "JailOnly", error.original_class
    refute Object.const_defined?(:JailOnly)
  end

  def test_wall_clock_on_a_sleeping_block
    error = assert_raises(CodeCell::TimeoutError) { CodeCell.jail(timeout: 0.5) { sleep } }
    refute error.cpu?
    assert_match(/0.5 s wall-clock/, error.message)
    assert_equal 0, descendants
  end

  def test_cpu_budget_on_a_spinning_block
    # A wall clock far above the budget: a loaded machine cannot turn it into a wall timeout.
    error = assert_raises(CodeCell::TimeoutError) { CodeCell.jail(timeout: 120, cpu_timeout: 0.3) { loop {} } }
    assert error.cpu?
    assert_match(/0.3 s CPU/, error.message)
    assert_equal 0, descendants
  end

  def test_memory_limit
    assert_raises(CodeCell::MemoryError) { CodeCell.jail(memory_mb: 64) { "x" * (400 << 20) } }
    assert_raises(CodeCell::MemoryError) { CodeCell.jail(memory_mb: 64) { Array.new(50_000_000) { |i| i } } }
  end

  def test_reading_outside_the_lists
    error = assert_raises(CodeCell::FilesystemError) { CodeCell.jail { File.read("/etc/shadow") } }
    assert_match(%r{/etc/shadow}, error.message)
    assert_equal "localhost", CodeCell.jail { File.read("/etc/hosts")[/localhost/] } # /etc is readable
    home = Dir.home rescue nil
    if home && File.directory?(home) && File.readable?(home)
      assert_raises(CodeCell::FilesystemError) { CodeCell.jail { Dir.children(home) } }
    end
    # world-readable, but in no list: Landlock's refusal
    scratch do |dir|
      File.write("#{dir}/data", "secret")
      File.chmod(0o644, "#{dir}/data")
      assert_raises(CodeCell::FilesystemError) { CodeCell.jail { File.read("#{dir}/data") } }
      assert_equal "secret", CodeCell.jail(fs_read_allow: [dir]) { File.read("#{dir}/data") }
      # a folder on $LOAD_PATH (an application's lib, its root) is not granted by being there
      $LOAD_PATH.unshift(dir)
      assert_raises(CodeCell::FilesystemError) { CodeCell.jail { File.read("#{dir}/data") } }
    ensure
      $LOAD_PATH.delete(dir)
    end
  end

  def test_writing_outside_fs_allow
    scratch do |dir|
      assert_equal 5, CodeCell.jail(fs_allow: [dir]) { File.write("#{dir}/out", "hello") }
      assert_equal "hello", File.read("#{dir}/out")
      assert_raises(CodeCell::FilesystemError) { CodeCell.jail(fs_read_allow: [dir]) { File.write("#{dir}/x", "1") } }
      assert_raises(CodeCell::FilesystemError) { CodeCell.jail { File.write("#{dir}/y", "1") } }
      assert_raises(CodeCell::FilesystemError) { CodeCell.jail(fs_allow: [dir]) { File.write("/etc/codecell-jail", "1") } }
      refute File.exist?("#{dir}/x")
    end
  end

  def test_other_errors_are_not_filesystem_errors
    error = assert_raises(CodeCell::SandboxError) { CodeCell.jail { File.read("/etc/no-such-file") } }
    assert_equal "Errno::ENOENT", error.original_class
    error = assert_raises(CodeCell::SandboxError) { CodeCell.jail { raise Errno::EACCES, "not a path" } }
    assert_equal "Errno::EACCES", error.original_class
  end

  def test_no_network
    server = TCPServer.new("127.0.0.1", 0)
    port = server.addr[1]
    error = assert_raises(CodeCell::SandboxError) { CodeCell.jail { TCPSocket.new("127.0.0.1", port) } }
    assert_match(/\AErrno::/, error.original_class)
    assert_raises(IO::WaitReadable) { server.accept_nonblock } # nothing came through
    # with network: true the same connection is made
    assert CodeCell.jail(network: true) { TCPSocket.new("127.0.0.1", port).close || true }
    server.accept.close
  ensure
    server&.close
  end

  def test_a_fork_bomb_is_bounded
    # Ruby's fork waits and tries again when the kernel refuses (EAGAIN), so the bomb runs
    # until the wall clock, never past the jail's 64 processes.
    most = 0
    watcher = Thread.new { loop { most = [most, descendants].max; sleep 0.02 } }
    assert_raises(CodeCell::TimeoutError) { CodeCell.jail(timeout: 3) { loop { fork { sleep } } } }
    watcher.kill
    assert_operator most, :>, 10
    assert_operator most, :<=, 64
    assert_equal 0, descendants
  end

  def test_the_parents_threads_keep_running
    ticks = 0
    ticker = Thread.new { loop { ticks += 1; sleep 0.01 } }
    seen_in_child = CodeCell.jail do
      before = ticks
      sleep 0.5
      ticks - before # only the calling thread exists in the child
    end
    assert_equal 0, seen_in_child
    before = ticks
    CodeCell.jail { sleep 0.5 }
    assert_operator ticks, :>, before
  ensure
    ticker&.kill
  end

  # As the seed: Marshal.dump raises TypeError in the child, which comes back as a SandboxError.
  def test_a_value_that_cannot_be_marshalled
    error = assert_raises(CodeCell::SandboxError) { CodeCell.jail { proc { 1 } } }
    assert_equal "TypeError", error.original_class
    assert_match(/no _dump_data is defined for class Proc/, error.original_message)
    error = assert_raises(CodeCell::SandboxError) { CodeCell.jail { [1, $stdout] } }
    assert_equal "TypeError", error.original_class
  end

  # A root caller's folder that only root may write (Dir.mktmpdir: 0700) is the child's to
  # write through an idmapped clone; what it makes is root's on the host, a file of another
  # owner inside stays another's, and nothing stays mounted.
  def test_fs_allow_honours_a_root_callers_ownership
    skip "needs root: the child of a root caller runs as nobody" unless root?

    Dir.mktmpdir("codecell-jail") do |dir|
      assert_equal 0o700, File.stat(dir).mode & 0o777
      File.write("#{dir}/theirs", "theirs")
      File.chown(1234, 1234, "#{dir}/theirs")
      layers = CodeCell.jail_layers(fs_allow: [dir])
      skip "this file system cannot be idmapped: #{layers.inspect}" unless layers.include?("idmapped_fs_allow")

      seen = CodeCell.jail(fs_allow: [dir]) do
        File.write("#{dir}/made", "in the jail")
        [Process.uid, File.stat(dir).uid]
      end
      assert_equal [65_534, 65_534], seen
      assert_equal [0, 0], [File.stat("#{dir}/made").uid, File.stat("#{dir}/made").gid]
      assert_raises(CodeCell::FilesystemError) { CodeCell.jail(fs_allow: [dir]) { File.write("#{dir}/theirs", "x") } }
      assert_equal "theirs", File.read("#{dir}/theirs")
      Dir.mktmpdir("codecell-jail-other") do |other|
        assert_raises(CodeCell::FilesystemError) do
          CodeCell.jail(fs_allow: [dir]) { File.write("#{other}/x", "x") }
        end
      end
      refute_includes File.read("/proc/self/mountinfo"), dir
    end
  end

  # agent_jail's memory limit is RLIMIT_AS: a host without a delegated cgroup (nobody's, here)
  # runs under :raise with a warning, and the limit holds.
  def test_raise_without_a_cgroup_falls_back_to_rlimit_as
    CodeCell.configure { |c| c.on_unsupported = :raise }
    assert_equal 2, CodeCell.jail { 1 + 1 }
    layers = CodeCell.jail_layers
    assert(layers.include?("rlimit_as") || layers.any? { |l| l.start_with?("cgroup_") }, layers.inspect)
    assert(layers.any? { |l| l.start_with?("landlock_abi_") }, layers.inspect)
    assert_raises(CodeCell::MemoryError) { CodeCell.jail(memory_mb: 64) { "x" * 400_000_000 } }
  end

  # A jail inside a jail: no namespaces of its own (the outer's filter refuses them), but its
  # own fork and clock, Landlock stacked on the outer's, and nothing left behind.
  def test_nested_jails
    assert_equal 1, CodeCell.jail { CodeCell.jail { 1 } }
    inner_pid, layers = CodeCell.jail { [CodeCell.jail { Process.pid }, CodeCell.jail_layers] }
    refute_equal 1, inner_pid
    assert_includes layers, "inside_another_jail"
    assert(layers.any? { |l| l.start_with?("landlock_abi_") }, layers.inspect)
    assert_equal :timeout, CodeCell.jail {
      begin
        CodeCell.jail(timeout: 0.3) { sleep }
      rescue CodeCell::TimeoutError
        :timeout
      end
    }
    error = assert_raises(CodeCell::SandboxError) { CodeCell.jail { CodeCell.jail { raise "inner" } } }
    assert_equal "CodeCell::SandboxError", error.original_class
    assert_equal "RuntimeError: inner", error.original_message
    scratch do |dir|
      # the inner jail cannot widen the outer's walls
      error = assert_raises(CodeCell::SandboxError) do
        CodeCell.jail { CodeCell.jail(fs_allow: [dir]) { File.write("#{dir}/x", "x") } }
      end
      assert_equal "CodeCell::FilesystemError", error.original_class
      assert_equal "yes", CodeCell.jail(fs_allow: [dir]) {
        CodeCell.jail(fs_allow: [dir]) { File.write("#{dir}/x", "yes") }
        File.read("#{dir}/x")
      }
    end
  end

  # keep_open hands the block the parent's open files as they are: the same offset, the same
  # peer; the rest still read as empty.
  def test_keep_open
    Tempfile.create("codecell-kept") do |f|
      f.write("hello world")
      f.flush
      f.rewind
      assert_equal "hello", CodeCell.jail(keep_open: [f]) { f.read(5) }
      assert_equal 5, f.pos # the offset is shared
      assert_nil CodeCell.jail { f.read(5) } # not kept: /dev/null
      a, b = UNIXSocket.pair
      CodeCell.jail(keep_open: [a]) { a.write("from the jail") }
      assert_equal "from the jail", b.read_nonblock(100)
      r, w = IO.pipe
      CodeCell.jail(keep_open: [w.fileno]) { w.write("by number"); w.flush; nil }
      w.close
      assert_equal "by number", r.read
    ensure
      [a, b, r].each { |io| io&.close }
    end
  end

  def test_keep_open_refuses
    assert_raises(TypeError) { CodeCell.jail(keep_open: ["/etc/passwd"]) { 1 } }
    assert_raises(TypeError) { CodeCell.jail(keep_open: $stdout) { 1 } }
    r, w = IO.pipe
    w.close
    assert_raises(ArgumentError) { CodeCell.jail(keep_open: [w]) { 1 } }
    error = assert_raises(ArgumentError) { CodeCell.jail(keep_open: [r.fileno + 1000]) { 1 } }
    assert_match(/is not open/, error.message)
    assert_raises(ArgumentError) { CodeCell.jail(keep_open: [-3]) { 1 } }
    File.open("/proc/self/ns/user") do |ns|
      error = assert_raises(ArgumentError) { CodeCell.jail(keep_open: [ns]) { 1 } }
      assert_match(/namespace/, error.message)
    end
    # The caller's machinery (an epoll set) is refused: the block would add its own
    # descriptors to it, with data the caller's loop takes for its own.
    require "fiddle"
    epoll_create1 = Fiddle::Function.new(Fiddle.dlopen(nil)["epoll_create1"], [Fiddle::TYPE_INT],
                                         Fiddle::TYPE_INT)
    ep = IO.for_fd(epoll_create1.call(0), autoclose: true)
    error = assert_raises(ArgumentError) { CodeCell.jail(keep_open: [ep]) { 1 } }
    assert_match(/an anonymous inode's/, error.message)
    ep.close
  ensure
    r&.close
  end

  def test_only_trusted_classes_load_in_the_parent
    point = Struct.new(:x, :y)
    Object.const_set(:JailPoint, point) unless Object.const_defined?(:JailPoint)
    error = assert_raises(CodeCell::Error) { CodeCell.jail { JailPoint.new(1, 2) } }
    assert_match(/JailPoint, which is not loaded unless trusted/, error.message)
    CodeCell.configure { |c| c.trusted_classes << JailPoint }
    assert_equal JailPoint.new(1, 2), CodeCell.jail { JailPoint.new(1, 2) }
  end

  def test_the_parents_files_are_out_of_reach
    r, w = IO.pipe
    CodeCell.jail { w.write("leak"); w.flush; nil }
    w.close
    assert_equal "", r.read # the child's write went to /dev/null
  ensure
    r&.close
  end

  def test_bad_options
    assert_raises(ArgumentError) { CodeCell.jail }
    assert_raises(ArgumentError) { CodeCell.jail(timeout: -1) { 1 } }
    assert_raises(ArgumentError) { CodeCell.jail(memory_mb: "lots") { 1 } }
    assert_raises(ArgumentError) { CodeCell.jail(fs_allow: ["/tmp\0x"]) { 1 } }
    assert_raises(TypeError) { CodeCell.jail(fs_allow: [42]) { 1 } }
    assert_raises(ArgumentError) { CodeCell.configure { |c| c.on_unsupported = :maybe } }
    CodeCell.reset!
    assert_equal 2, CodeCell.jail(fs_allow: ["/app/tmp/not-here"]) { 1 + 1 } # left out, as the seed does
  end

  def test_configure_sets_the_defaults
    CodeCell.configure { |c| c.default_timeout = 0.5 }
    assert_raises(CodeCell::TimeoutError) { CodeCell.jail { sleep } }
  end

  # A host without Landlock, made for real: a seccomp filter answers ENOSYS to its calls
  # (tests/bindings/without_landlock.c), as an old kernel does.
  def test_on_unsupported_without_landlock
    wrapper = ENV["CODECELL_WITHOUT_LANDLOCK"]
    skip "CODECELL_WITHOUT_LANDLOCK is not set (tests/bindings/CMakeLists.txt sets it)" unless wrapper

    script = <<~RUBY
      require "codecell"
      CodeCell.configure { |c| c.on_unsupported = ARGV[0].to_sym }
      begin
        p CodeCell.jail { File.read("/etc/hostname").size.positive? }
      rescue CodeCell::UnsupportedPlatformError => e
        puts "unsupported: \#{e.message}"
      end
    RUBY
    run = lambda do |policy|
      out, err, status = Open3.capture3(wrapper, RbConfig.ruby, "-e", script, policy.to_s)
      assert status.success?, err
      [out, err]
    end
    out, = run.call(:raise)
    assert_match(/unsupported: landlock: not available/, out)
    out, err = run.call(:warn)
    assert_equal "true\n", out
    assert_match(/\[CodeCell\] WARNING: landlock: not available/, err)
    out, err = run.call(:ignore)
    assert_equal "true\n", out
    refute_match(/landlock/, err)
  end
end
