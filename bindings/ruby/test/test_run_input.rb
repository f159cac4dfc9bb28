# frozen_string_literal: true

require_relative "helper"

# What a run is given besides its code, as `codecell run` gives it: its own wall clock, stdin,
# argv, environment variables and its output as it comes.
class TestRunInput < Minitest::Test
  SLEEP = { ruby: "sleep %s; 1", python: "import time\ntime.sleep(%s)\n1" }.freeze

  def setup
    @cells = SLEEP.keys.to_h { |lang| [lang, CodeCell::Cell.new(language: lang, pool: 1, timeout_ms: 5_000)] }
  end

  def teardown
    @cells.each_value(&:close)
  end

  def test_a_runs_timeout_narrows_the_cells
    @cells.each do |lang, cell|
      code = format(SLEEP[lang], 1)
      assert_equal :ok, cell.run(code).status
      [cell.run(code, timeout_ms: 300), cell.eval(code, timeout_ms: 300),
       cell.session("t").eval(code, timeout_ms: 300)].each do |r|
        assert_equal :timeout, r.status, r.to_h.inspect
        assert_includes r.error, "timed out after 300 ms"
      end
    end
  end

  def test_a_runs_timeout_never_widens_the_cells
    CodeCell::Cell.open(language: :ruby, pool: 0, timeout_ms: 1_000) do |cell|
      r = cell.run("sleep 10", timeout_ms: 60_000)
      assert_equal :timeout, r.status
      assert_includes r.error, "timed out after 1000 ms"
    end
  end

  def test_stdin_argv_and_env
    code = { ruby: "[$stdin.binmode.read.unpack1('H*'), ARGV, ENV['CITY']]",
             python: "import sys, os\n[sys.stdin.buffer.read().hex(), sys.argv[1:], os.environ.get('CITY')]" }
    @cells.each do |lang, cell|
      r = cell.run(code[lang], stdin: "\x00\xffab".b, argv: ["one", "zürich"], env: { "CITY" => "Oslo" })
      assert_equal ["00ff6162", ["one", "zürich"], "Oslo"], r.value, lang
      r = cell.eval(code[lang], stdin: "hé", argv: [], env: {})
      assert_equal ["68c3a9", [], nil], r.value, lang
      r = cell.session("s").eval(code[lang], env: { CITY: "Bergen" }, argv: ["x"])
      assert_equal ["", ["x"], "Bergen"], r.value, lang
      assert_equal ["", [], nil], cell.run(code[lang]).value, lang # none given: empty stdin, no arguments
      cell.close_all
    end
  end

  def test_bad_input_is_refused_before_the_run
    cell = @cells[:ruby]
    assert_raises(ArgumentError) { cell.run("1", env: { "1BAD" => "x" }) } # the engine's rule for names
    assert_raises(ArgumentError) { cell.run("1", env: { "A=B" => "x" }) }
    assert_raises(TypeError) { cell.run("1", env: { "A" => 1 }) }
    assert_raises(TypeError) { cell.run("1", argv: "one") }
    assert_raises(ArgumentError) { cell.run("1", argv: ["a\0b"]) }
    assert_raises(TypeError) { cell.run("1", stdin: 1) }
    assert_raises(ArgumentError) { cell.run("1", timeout_ms: 0) }
    assert_raises(TypeError) { cell.run("1", timeout_ms: 1.5) }
    assert_raises(TypeError) { cell.run("1", on_output: "puts") }
    assert_raises(ArgumentError) { cell.eval("1", timeout: 3) }
    assert_equal 2, cell.run("1 + 1").value
  end

  def test_output_comes_as_the_code_writes_it
    # The guest asks a host tool what the output block has seen so far: its first lines,
    # before the run ends.
    code = { ruby: "$stdout.sync = true\nputs 'one'\n$stderr.puts 'two'\nseen = SB.call('seen')\n" \
                   "$stdin.gets\nputs 'é' * 3\nseen",
             python: "import sys\nprint('one', flush=True)\nsys.stderr.write('two\\n')\nsys.stderr.flush()\n" \
                     "seen = sb.call('seen')\ninput()\nprint('é' * 3)\nseen" }
    code.each do |lang, text|
      pieces = []
      CodeCell::Cell.open(language: lang, pool: 0) do |cell|
        cell.tool("seen") { pieces.map { |s, t| [s.to_s, t] } }
        runs = [->(&b) { cell.run(text, stdin: "\n", &b) },
                ->(&b) { cell.eval(text, stdin: "\n", on_output: b) },
                ->(&b) { cell.session("live").eval(text, stdin: "\n", &b) }]
        runs.each do |run|
          r = run.call { |stream, piece| pieces << [stream, piece] }
          assert_equal :ok, r.status, r.to_h.inspect
          assert_equal [["stderr", "two\n"], ["stdout", "one\n"]], r.value.sort
          by_stream = %i[stdout stderr].to_h { |s| [s, pieces.select { |st, _| st == s }.map(&:last).join] }
          assert_equal({ stdout: "one\nééé\n", stderr: "two\n" }, by_stream, lang)
          assert_equal r.stdout, by_stream[:stdout] # the same bytes the result holds
          pieces.clear
        end
      end
    end
  end

  def test_what_the_output_block_raises_cancels_the_run_and_is_raised
    cell = @cells[:ruby]
    code = "puts 'x'; $stdout.flush; sleep 30"
    e = assert_raises(KeyError) { cell.run(code, on_output: ->(_, text) { raise KeyError, text }) }
    assert_equal "x\n", e.message
    assert_equal "x\n", catch(:out) { cell.run(code) { |_, text| throw :out, text } }
    assert_nil Thread.new { cell.run(code) { Thread.current.kill } }.value
    assert_equal 2, cell.run("1 + 1").value # the cell goes on
  end
end
