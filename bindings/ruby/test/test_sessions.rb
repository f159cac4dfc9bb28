# frozen_string_literal: true

require_relative "helper"

# Sessions as the seed's Repl has them: the default name, close one / close all, the
# process-wide list, and a kernel killed from outside that comes back fresh and says so.
class TestSessions < Minitest::Test
  include Helper

  def test_an_eval_without_a_name_runs_in_the_default_session
    CodeCell::Cell.open(language: :ruby, pool: 0) do |cell|
      assert_equal :ok, cell.eval("x = 41").status
      assert_equal ["default"], cell.sessions
      assert_equal 42, cell.eval("x + 1", session: "default").value
      assert_equal 42, cell.session.eval("x + 1").value
      assert_equal "default", cell.session.name
      r = cell.eval("defined?(x).inspect", reset: true)
      assert_equal "nil", r.value, r.to_json
      assert_nil r.state_lost, "a reset asked for is not a loss to report"
      assert_equal 1, cell.eval("1", session: :other).value
      assert_equal %w[default other], cell.sessions.sort
      assert cell.close_session
      refute cell.close_session
      assert_equal ["other"], cell.sessions
      assert_raises(ArgumentError) { cell.eval("1", session: "bad name!") }
    end
  end

  def test_a_parked_session_is_restored_and_a_fork_goes_its_own_way
    %i[ruby python].each do |language|
      CodeCell::Cell.open(language: language, pool: 0) do |cell|
        assert_equal [41], cell.eval(language == :ruby ? "x = [41]" : "x = [41]\nx").value
        assert_nil cell.eval("1").restored
        cell.park_session
        r = cell.eval("x")
        assert_equal [41], r.value, r.to_json
        assert_equal 2, r.restored["evals"], r.to_json
        cell.fork_session("default", "what-if")
        grow = language == :ruby ? "x << 1; x" : "x.append(1)\nx"
        assert_equal [41, 1], cell.eval(grow, session: "what-if").value
        assert_equal [41], cell.eval("x").value
        assert_raises(ArgumentError) { cell.park_session("nope") }
      end
    end
  end

  def test_sessions_are_listed_and_closed_process_wide
    a = CodeCell::Cell.new(language: :ruby, pool: 0)
    b = CodeCell::Cell.new(language: :python, pool: 0)
    before = CodeCell.sessions.size
    a.eval("v = 1")
    a.eval("w = 2", session: "work")
    b.eval("v = 3")
    mine = CodeCell.sessions.select { |s| [a, b].any? { |c| c.equal?(s.cell) } }
    assert_equal 3, mine.size, mine.inspect
    assert_includes mine, a.session("work")
    assert_includes mine, b.session
    assert_equal before + 3, CodeCell.sessions.size
    # One name, in every cell.
    assert CodeCell.close_session("default")
    assert_equal ["work"], a.sessions
    assert_empty b.sessions
    refute CodeCell.close_session("default")
    b.eval("v = 4")
    assert_operator CodeCell.close_all, :>=, 2
    assert_empty a.sessions
    assert_empty b.sessions
    # The cells stay open; their sessions start afresh.
    assert_equal "nil", a.eval("defined?(v).inspect").value
    # A closed cell is left out.
    a.close
    refute(CodeCell.sessions.any? { |s| s.cell.equal?(a) })
  ensure
    a&.close
    b&.close
  end

  # How the kernel is killed from outside: its interpreter alone, its init (whose end takes
  # the interpreter with it), or every process group of its sandbox.
  # A process or group already gone (killing one group ends init, which may take the next
  # group before it is reached) is fine.
  KILL = lambda do |target|
    Process.kill(:KILL, target)
  rescue Errno::ESRCH
    nil
  end
  KILLS = {
    interpreter: ->(t, pid) { Process.kill(:KILL, pid) },
    init: ->(t, pid) { t.sandbox_of(pid).select { |p| t.comm(p) == "codecell-init" }.each { |p| KILL.call(p) } },
    group: ->(t, pid) { t.groups_of(pid).each { |g| KILL.call(-g) } }
  }.freeze

  def test_a_kernel_killed_from_outside_comes_back_fresh_and_says_so
    %i[ruby python].each do |language|
      CodeCell::Cell.open(language: language, pool: 0) do |cell|
        KILLS.each do |how, kill|
          assert_equal :ok, cell.eval("x = 1").status
          pid = interpreter_of(cell)
          kill.call(self, pid)
          wait_until { !File.exist?("/proc/#{pid}") }
          r = cell.eval(language == :ruby ? "defined?(x).inspect" : "'x' in globals()")
          assert_equal :ok, r.status, "#{language} #{how}: #{r.to_json}"
          assert_equal(language == :ruby ? "nil" : false, r.value, "#{language} #{how}")
          refute_nil r.state_lost, "#{language} #{how}: the loss was not said"
          assert_includes r.state_lost, "killed by signal 9", "#{language} #{how}"
          assert_includes r.state_lost, "this eval ran in a fresh session"
          assert_nil cell.eval("1").state_lost, "#{language} #{how}: said twice"
        end
      end
    end
  end

  # The interpreter of the cell's only session, by its name below this process.
  def interpreter_of(cell)
    names = cell.language == :ruby ? ["ruby"] : %w[python3 python]
    found = []
    wait_until do
      found = below(Process.pid).select { |p| names.include?(comm(p)) && ns(p) != ns(Process.pid) }
      found.size == 1
    end
    found.first
  end

  def sandbox_of(pid)
    below(Process.pid).select { |p| ns(p) == ns(pid) }
  end

  def groups_of(pid)
    groups = sandbox_of(pid).map { |p| Process.getpgid(p) }.uniq
    # Never this process's own group.
    refute_includes groups, Process.getpgrp
    groups
  end

  def comm(pid)
    File.read("/proc/#{pid}/comm").strip
  rescue SystemCallError
    nil
  end

  def ns(pid)
    File.readlink("/proc/#{pid}/ns/pid")
  rescue SystemCallError
    nil
  end

  def below(me)
    parents = {}
    Dir.glob("/proc/[0-9]*/stat").each do |f|
      stat = File.read(f) rescue next
      parents[File.basename(File.dirname(f)).to_i] = stat[(stat.rindex(")") + 2)..].split[1].to_i
    end
    parents.keys.select do |pid|
      p = parents[pid]
      p = parents[p] while p && p > 1 && p != me
      p == me
    end
  end
end
