# frozen_string_literal: true

require_relative "helper"

# The bytes a jailed block hands back are the attacker's once its code took the process over
# (issue 18): what the parent's check and load make of forged answers.
class TestJailAnswers < Minitest::Test
  include Helper

  # Generous: only a guard against a parent that never returns, not a timing assertion.
  HANG_GUARD = 120

  def setup
    CodeCell.reset!
  end

  def teardown
    CodeCell.reset!
  end

  # a_k = [a_(k-1), a_(k-1)], the second by an object link, as a hash key: loading it hashes
  # 2^n arrays.
  def shared_bomb(n)
    long = ->(i) { (i.zero? ? "\x00" : (i + 5).chr).b }
    ser = ->(k) { k.zero? ? "[\x00".b : "[\x07".b + ser.call(k - 1) + "@".b + long.call(n - k + 2) }
    "\x04\x08{\x06".b + ser.call(n) + "i\x06".b
  end

  def deep_symbol
    "\x04\x08o".b + ("I".b * 1_000_000) + ":\x06A".b
  end

  # Runs the block in a child and returns what it printed; a child still busy after
  # HANG_GUARD seconds is killed and the test fails.
  def in_child
    r, w = IO.pipe
    pid = fork do
      r.close
      w.write(yield.to_s)
      exit!(0)
    end
    w.close
    deadline = Time.now + HANG_GUARD
    done = nil
    sleep 0.05 until (done = Process.waitpid(pid, Process::WNOHANG)) || Time.now > deadline
    unless done
      Process.kill(:KILL, pid)
      Process.waitpid(pid)
      flunk "still loading after #{HANG_GUARD} s"
    end
    r.read
  ensure
    r&.close
  end

  def load_outcome(bytes)
    in_child do
      CodeCell::Jail.load_value(bytes, [])
      "loaded"
    rescue CodeCell::Error => e
      "#{e.class}: #{e.message}"
    rescue Exception => e # rubocop:disable Lint/RescueException
      "untyped #{e.class}"
    end
  end

  def test_a_shared_reference_bomb_is_refused
    outcome = load_outcome(shared_bomb(64))
    assert_match(/\ACodeCell::Error: .*same array, hash or object twice/, outcome)
  end

  def test_a_cycle_is_refused
    a = []
    a << a
    error = assert_raises(CodeCell::Error) { CodeCell::Jail.load_value(Marshal.dump(a), []) }
    assert_match(/must be a tree/, error.message)
  end

  def test_a_symbol_with_a_million_encodings_is_a_codecell_error
    assert_match(/\ACodeCell::Error: .*a symbol expected/, load_outcome(deep_symbol))
    # The same answer as a block's error (RAISED) goes through the same check.
    outcome = in_child do
      CodeCell::Jail.interpret({ outcome: :raised, data: deep_symbol }, {}, [])
    rescue CodeCell::Error => e
      "#{e.class}: #{e.message}"
    end
    assert_match(/\ACodeCell::Error: the block's error came back malformed/, outcome)
  end

  def test_symbols_nested_in_symbol_encodings_stop_at_the_depth_limit
    bytes = "\x04\x08o".b + ("I:\x06A\x06".b * 5000) + ":\x06B0".b
    error = assert_raises(CodeCell::Error) { CodeCell::Jail.load_value(bytes, []) }
    assert_match(/nested deeper than/, error.message)
  end

  def test_hash_keys_nested_in_hash_keys_are_bounded
    key = 0
    40.times { key = { key => 1 } }
    error = assert_raises(CodeCell::Error) { CodeCell::Jail.load_value(Marshal.dump(key), []) }
    assert_match(/hash keys nested deeper/, error.message)
  end

  def test_links_that_repeat_a_big_string_are_bounded
    big = "x" * (1 << 20)
    error = assert_raises(CodeCell::Error) { CodeCell::Jail.load_value(Marshal.dump([big] * 100), []) }
    assert_match(/links repeat more than/, error.message)
  end

  # Marshal links equal strings (hash keys are shared), symbols and floats: they still load.
  def test_repeated_strings_symbols_and_nested_arrays_round_trip
    s = "shared"
    f = 1e300
    value = [{ "name" => "a", "tags" => [:x, :y] }, { "name" => "b", "tags" => [:x, [s, [s, f, f]]] },
             s, "é".encode("ISO-8859-1"), 2**80, 2**80, Time.at(0).utc, :x]
    bytes = Marshal.dump(value)
    assert_includes bytes, "@" # it does hold object links
    loaded = CodeCell::Jail.load_value(bytes, [])
    assert_equal value, loaded
    assert_equal Encoding::ISO_8859_1, loaded[3].encoding
    assert_equal value, CodeCell.jail { value }
  end

  # Through a real jail: the block takes the library's own answer path, as a taken-over
  # process would.
  def forged_answer(bytes, outcome = :value)
    CodeCell.jail(timeout: 30) do
      ObjectSpace.each_object(CodeCell::Native::Jail) do |native| # earlier calls' are closed
        native.answer(CodeCell::Native::Jail::ANSWERS.fetch(outcome), bytes)
        exit!(0)
      rescue CodeCell::Error
        next
      end
      exit!(1)
    end
  end

  def test_forged_answers_through_a_jail
    outcome = in_child do
      forged_answer(shared_bomb(64))
    rescue CodeCell::Error => e
      "#{e.class}: #{e.message}"
    end
    assert_match(/\ACodeCell::Error: .*same array, hash or object twice/, outcome)
    %i[value raised filesystem].each do |kind|
      error = assert_raises(CodeCell::Error) { forged_answer(deep_symbol, kind) }
      assert_match(/a symbol expected/, error.message)
    end
  end
end
