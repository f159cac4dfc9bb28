# frozen_string_literal: true

require_relative "helper"

# What a run is given besides its code, as `codecell run` gives it: its own wall clock, stdin,
# argv, environment variables, files written into /work and its output as it comes.
class TestRunInput < Minitest::Test
  SLEEP = { ruby: "sleep %s; 1", python: "import time\ntime.sleep(%s)\n1" }.freeze
  # Reads back what files: wrote: the CSV as text, the binary file as hex, the nested folder.
  READ_FILES = {
    ruby: "[File.read('/work/sales.csv'), File.binread('/work/all.bin').unpack1('H*'), " \
          "Dir.children('/work/in/deep').sort, File.directory?('/work/in')]",
    python: "import os\n[open('/work/sales.csv').read(), open('/work/all.bin', 'rb').read().hex(), " \
            "sorted(os.listdir('/work/in/deep')), os.path.isdir('/work/in')]"
  }.freeze
  EXISTS = { ruby: "File.exist?('/work/%s')", python: "import os\nos.path.exists('/work/%s')" }.freeze
  CSV = "city,sales\nOslo,12\nZürich,7\n"
  ALL_BYTES = (0..255).to_a.pack("C*").freeze

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

  def test_files_are_written_into_work_before_the_code_runs
    files = { "sales.csv" => CSV, "all.bin" => ALL_BYTES, "in/deep/notes.txt" => "",
              "in/deep/résumé.md" => "# hi" }
    want = [CSV, ALL_BYTES.unpack1("H*"), ["notes.txt", "résumé.md"], true]
    @cells.each do |lang, cell|
      r = cell.run(READ_FILES[lang], files: files)
      assert_equal :ok, r.status, r.to_h.inspect
      assert_equal want, r.value, lang
      # A String's bytes as they are, whatever its encoding says.
      r = cell.run(READ_FILES[lang], files: files.transform_values { |v| v.b })
      assert_equal want, r.value, lang
      # A run is a fresh sandbox: the last run's files are gone.
      assert_equal false, cell.run(format(EXISTS[lang], "sales.csv")).value, lang
    end
  end

  def test_a_sessions_files_stay_for_the_next_eval
    @cells.each do |lang, cell|
      session = cell.session("files")
      assert_equal :ok, session.eval("1", files: { "sales.csv" => CSV }).status
      r = session.eval(READ_FILES[lang], files: { "all.bin" => ALL_BYTES, "in/deep/x" => "x" })
      assert_equal [CSV, ALL_BYTES.unpack1("H*"), ["x"], true], r.value, lang
      # Cell#eval reaches the same session's /work.
      assert_equal true, cell.eval(format(EXISTS[lang], "in/deep/x"), session: "files").value, lang
      cell.close_all
    end
  end

  def test_a_bad_file_is_refused_naming_the_entry
    @cells.each do |lang, cell|
      ["../x", "/etc/passwd", "a//b", "a/./b", "x\n", "\xff".b].each do |name|
        e = assert_raises(ArgumentError) { cell.run("1", files: { name => "x" }) }
        assert_includes e.message, "files[0].name", name
        e = assert_raises(ArgumentError) { cell.session("bad").eval("1", files: { "ok.txt" => "x", name => "x" }) }
        assert_includes e.message, "files[1].name", name
      end
      e = assert_raises(ArgumentError) { cell.run("1", files: { "a\0b" => "x" }) } # a C string ends at a NUL
      assert_includes e.message, "files[0].name"
      # Nothing of a refused eval was written: not even the good entry before the bad one.
      assert_equal false, cell.session("bad").eval(format(EXISTS[lang], "ok.txt")).value, lang
      cell.close_all
    end
    cell = @cells[:ruby]
    { "sales.csv" => "files: a Hash", [["a", "x"]] => "files: a Hash",
      { a: "x" } => "files[0].name: a String, not :a",
      { "a" => 1 } => "files[0].content: a String, not Integer",
      { "a" => "x", "b" => nil } => "files[1].content" }.each do |files, message|
      e = assert_raises(TypeError) { cell.run("1", files: files) }
      assert_includes e.message, message
    end
    e = assert_raises(ArgumentError) { cell.eval("1", files: { "\xff".dup.force_encoding("UTF-16LE") => "x" }) }
    assert_includes e.message, "files[0].name"
  end

  def test_more_files_than_the_cells_limit_are_refused
    SLEEP.each_key do |lang|
      CodeCell::Cell.open(language: lang, pool: 0, limits: { files_in: 2, files_in_bytes: 10 }) do |cell|
        two = { "a" => "1", "b/c" => "2" }
        assert_equal true, cell.run(format(EXISTS[lang], "b/c"), files: two).value
        [->(f) { cell.run("1", files: f) }, ->(f) { cell.eval("1", files: f) }].each do |run|
          e = assert_raises(ArgumentError) { run.call(two.merge("d" => "3")) }
          assert_includes e.message, "more than 2 files"
          assert_includes e.message, "files_in"
          e = assert_raises(ArgumentError) { run.call({ "a" => "12345", "b" => "123456".b }) } # 11 bytes in all
          assert_includes e.message, "files[1]"
        end
      end
    end
  end
end
