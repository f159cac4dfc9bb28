# frozen_string_literal: true

require_relative "helper"
require "rbconfig"

class TestCell < Minitest::Test
  include Helper

  def test_runs_ruby_and_python
    CodeCell::Cell.open(language: :ruby, pool: 0) do |cell|
      r = cell.run("puts 'hi'; 2**70")
      assert_equal :ok, r.status
      assert_equal 2**70, r.value
      assert_equal "hi\n", r.stdout
      assert_equal({ status: "ok", value: 2**70, stdout: "hi\n" }, r.to_h)
      assert_operator r.timings[:duration_ms], :>=, 0
    end
    CodeCell::Cell.open(language: "python", pool: 0) do |cell|
      r = cell.run("import sys\nprint('err', file=sys.stderr)\n[1.5, None, float('nan')]")
      assert_equal 1.5, r.value[0]
      assert_nil r.value[1]
      assert r.value[2].nan?
      assert_equal "err\n", r.stderr
    end
  end

  # The gem compiles the engine with its fork server and the forked sandboxes' init: a cell
  # forks its sandboxes (the interpreter's parent, the zygote, has no pid inside), it does not
  # quietly exec one per run because a part failed to build.
  def test_cells_fork_their_sandboxes
    CodeCell::Cell.open(language: :ruby, pool: 0) do |cell|
      assert_equal [0, 2], cell.run("[Process.ppid, Process.pid]").value
    end
  end

  def test_error_result_is_the_seeds_hash
    CodeCell::Cell.open(language: :ruby, pool: 0) do |cell|
      r = cell.run("raise ArgumentError, 'bad'")
      assert_equal :error, r.status
      assert_nil r.value
      assert_equal "ArgumentError", r.error["class"]
      h = r.to_h
      assert_equal "error", h[:status]
      assert_equal "bad", h[:error]["message"]
      refute h.key?(:value)
    end
  end

  def test_limits_and_statuses
    CodeCell::Cell.open(language: :ruby, pool: 0, timeout_ms: 700) do |cell|
      r = cell.run("sleep 30")
      assert_equal :timeout, r.status
      assert_match(/timed out/, r.error)
    end
    CodeCell::Cell.open(language: :python, pool: 0, cpu_ms: 300) do |cell|
      assert_equal :fuel_exhausted, cell.run("while True: pass").status
    end
    CodeCell::Cell.open(language: :ruby, pool: 0, memory: 64 << 20) do |cell|
      assert_equal :memory_limit, cell.run("'x' * (512 << 20)").status
    end
    CodeCell::Cell.open(language: :ruby, pool: 0, limits: { output_bytes: 1000 }) do |cell|
      r = cell.run("puts 'y' * 5000")
      assert_operator r.stdout.bytesize, :<, 2000
    end
  end

  def test_pictures_come_back_as_images
    CodeCell::Cell.open(language: :python, pool: 0, image_folder: "/work/pictures") do |cell|
      r = cell.run("import os, matplotlib.pyplot as plt\nos.makedirs('/work/pictures')\n" \
                   "plt.plot([1, 2])\nplt.savefig('/work/pictures/a.png')\nplt.close('all')")
      assert_equal :ok, r.status, r.error.inspect
      assert_equal 1, r.images.size
      mime, bytes = r.images.first
      assert_equal "image/png", mime
      assert bytes.start_with?("\x89PNG\r\n\x1a\n".b)
    end
  end

  def test_the_output_folder_hands_back_files
    code = { python: "import os\nos.mkdir('/work/out')\nopen('/work/out/t.csv', 'w').write('a,b\\n')\n" \
                     "open('/work/out/z.bin', 'wb').write(bytes([0, 255]))\nos.mkfifo('/work/out/f')",
             ruby: "Dir.mkdir('/work/out'); File.write('/work/out/t.csv', \"a,b\\n\"); " \
                   "File.binwrite('/work/out/z.bin', [0, 255].pack('C*')); File.mkfifo('/work/out/f')" }
    code.each do |language, snippet|
      CodeCell::Cell.open(language: language, pool: 0, output_folder: "/work/out") do |cell|
        r = cell.run(snippet)
        assert_equal :ok, r.status, r.error.inspect
        assert_equal [["t.csv", "text/csv", "a,b\n"], ["z.bin", "application/octet-stream", "\0\xff".b]],
                     r.files
        assert_equal [{ "name" => "f", "reason" => "a FIFO (not read)" }], r.files_omitted
      end
    end
    assert_raises(ArgumentError) { CodeCell::Cell.new(output_folder: "/work/a", image_folder: "/work/b") }
  end

  def test_bad_configuration_raises_argument_error
    assert_raises(ArgumentError) { CodeCell::Cell.new(language: :cobol) }
    assert_raises(ArgumentError) { CodeCell::Cell.new(limits: { nope: 1 }) }
    assert_raises(ArgumentError) { CodeCell::Cell.new(timeout_ms: 0) }
    assert_raises(ArgumentError) { CodeCell::Cell.new(mounts: [{ source: "/nonexistent-codecell", dest: "/data" }]) }
    assert_raises(ArgumentError) { CodeCell::Cell.new(mounts: [{ source: Dir.tmpdir, dest: "/usr/x" }]) }
    assert_raises(ArgumentError) { CodeCell::Cell.new(policy: :sometimes) }
  end

  def test_bad_code_and_names_raise_argument_error
    CodeCell::Cell.open(language: :ruby, pool: 0) do |cell|
      assert_raises(ArgumentError) { cell.run("\xff".b) }
      assert_raises(ArgumentError) { cell.session("a\0b").eval("1") }
      assert_raises(ArgumentError) { cell.tool("t\0") { 1 } }
      assert_equal 1, cell.run("1").value
    end
  end

  def test_mounts_read_only_and_read_write
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "in.txt"), "data")
      out = File.join(dir, "out")
      Dir.mkdir(out)
      File.chmod(0o777, out)
      File.chmod(0o755, dir)
      mounts = [{ source: dir, dest: "/data" }, { source: out, dest: "/out", mode: :rw }]
      CodeCell::Cell.open(language: :ruby, pool: 0, mounts: mounts) do |cell|
        assert_equal "data", cell.run("File.read('/data/in.txt')").value
        assert_equal :error, cell.run("File.write('/data/x', '1')").status
        assert_equal :ok, cell.run("File.write('/out/y', 'w')").status
        assert_equal "w", File.read(File.join(out, "y"))
      end
    end
  end

  def test_sessions_keep_state_until_reset
    CodeCell::Cell.open(language: :ruby, pool: 0) do |cell|
      s = cell.session("work")
      assert_equal :ok, s.eval("x = 41").status
      assert_equal 42, s.eval("x + 1").value
      assert_equal ["work"], cell.sessions
      s.reset
      assert_equal "NameError", s.eval("x").error["class"]
      assert s.close
      refute s.close
      assert_empty cell.sessions
      cell.session("py-ish") { |t| t.eval("y = 1") }
      assert_empty cell.sessions
      assert_raises(ArgumentError) { cell.session("bad name!").eval("1") }
    end
  end

  # A raise into its idle main thread keeps the state and is said; a kernel killed from outside
  # between evals is said in the next result, which ran in a fresh session.
  def test_a_session_says_what_became_of_its_state
    Dir.mktmpdir do |out|
      File.chmod(0o777, out)
      CodeCell::Cell.open(language: :ruby, pool: 0, mounts: [{ source: out, dest: "/out", mode: :rw }]) do |cell|
        s = cell.session("s")
        s.eval("x = 6; t = Thread.new { sleep 0.3; Thread.main.raise 'boom' }; " \
               "Thread.new { t.join; File.write('/out/acted', '') }; 1")
        wait_until { File.exist?(File.join(out, "acted")) }
        r = s.eval("x")
        assert_equal 6, r.value, r.to_json
        assert_equal [{ "class" => "RuntimeError", "message" => "boom" }], r.idle_interrupts
        assert_nil r.state_lost
        kernels = interpreters_below(Process.pid, "ruby")
        assert_equal 1, kernels.size, kernels.inspect
        Process.kill(:KILL, kernels[0])
        wait_until { !File.exist?("/proc/#{kernels[0]}") }
        r = s.eval("defined?(x).inspect")
        assert_equal "nil", r.value, r.to_json
        assert_includes r.state_lost, "killed by signal 9"
        assert_nil s.eval("1").state_lost
      end
    end
  end

  # The processes named name (a sandbox's interpreter) anywhere below pid me.
  def interpreters_below(me, name)
    parents = {}
    names = {}
    Dir.glob("/proc/[0-9]*/stat").each do |f|
      stat = File.read(f) rescue next
      pid = File.basename(File.dirname(f)).to_i
      parents[pid] = stat[(stat.rindex(")") + 2)..].split[1].to_i
      names[pid] = stat[(stat.index("(") + 1)...stat.rindex(")")]
    end
    parents.keys.select do |pid|
      p = parents[pid]
      p = parents[p] while p && p > 1 && p != me
      p == me && names[pid] == name
    end
  end

  def test_other_ruby_threads_go_on_during_a_run
    CodeCell::Cell.open(language: :ruby, pool: 0) do |cell|
      ticks = 0
      ticker = Thread.new { loop { ticks += 1; sleep 0.01 } }
      assert_equal :ok, cell.run("sleep 1").status
      ticker.kill
      assert_operator ticks, :>, 10, "the GVL was held while the code ran"
    end
  end

  def test_killing_the_thread_cancels_the_run
    CodeCell::Cell.open(language: :ruby, pool: 0) do |cell|
      runner = Thread.new { cell.run("sleep 60") }
      wait_until { descendants.positive? }
      runner.kill
      refute_nil runner.join(30), "the run went on after Thread#kill"
      wait_until { descendants.zero? }
    end
  end

  def test_a_signal_to_the_process_cancels_the_run
    # The code would sleep 300 s: an interrupt that waited for it would come after that.
    script = <<~'RUBY'
      require "codecell"
      cell = CodeCell::Cell.new(language: :ruby, pool: 0, timeout_ms: 400_000)
      $stdout.sync = true
      start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      begin
        puts "running"
        cell.run("sleep 300")
        puts "finished"
      rescue Interrupt
        puts "interrupted after #{(Process.clock_gettime(Process::CLOCK_MONOTONIC) - start).round} s"
      end
    RUBY
    IO.popen([RbConfig.ruby, "-e", script], err: %i[child out]) do |io|
      assert_equal "running\n", io.gets
      wait_until { descendants(io.pid).positive? } # the sandbox runs
      Process.kill("INT", io.pid)
      line = io.gets
      assert_match(/\Ainterrupted after \d+ s\n\z/, line)
      assert_operator line[/\d+/].to_i, :<, 250, "Ctrl-C waited for the code to end"
    end
  end

  def test_closed_cell_refuses_and_close_is_idempotent
    cell = CodeCell::Cell.new(language: :ruby, pool: 0)
    cell.close
    cell.close
    assert cell.closed?
    assert_raises(CodeCell::Error) { cell.run("1") }
  end

  def test_close_and_gc_leave_no_sandbox_or_thread
    warm = CodeCell::Cell.new(language: :ruby, pool: 0)
    warm.tool("t") { 1 } # the dispatching thread lives for the process: start it first
    warm.close
    wait_until { descendants.zero? }
    threads = os_threads

    cell = CodeCell::Cell.new(language: :ruby, pool: 2)
    cell.warmup
    assert_operator descendants, :>, 0
    cell.close
    assert_equal 0, descendants, "close left a sandbox"
    wait_until { os_threads <= threads }

    make_and_drop = lambda do
      c = CodeCell::Cell.new(language: :python, pool: 2)
      c.tool("t") { 1 }
      c.warmup
      c.run("sb.call('t')")
      nil
    end
    # On a thread of its own, whose stack is gone after join: Ruby's GC scans stacks
    # conservatively, and a stale slot on this one could keep the cell alive.
    Thread.new { make_and_drop.call }.join
    wait_until { descendants.zero? && os_threads <= threads }
  end
end
