# frozen_string_literal: true

require_relative "helper"

class TestTools < Minitest::Test
  include Helper

  def setup
    @cell = CodeCell::Cell.new(language: :ruby, pool: 2, limits: { tool_call_ms: 1500 })
    @cell.tool("weather.today", description: "The weather in a city",
                                input_schema: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } },
                                                required: ["city"] }) do |city:, days: 1|
      { "city" => city, "days" => days, "sky" => "clear" }
    end
    @cell.tool("boom") { raise KeyError, "no such key" }
    @cell.tool("slow") { |seconds:| sleep seconds; "done" }
    @cell.tool("whole") { |args| args.keys.sort }
  end

  def teardown
    @cell.close
  end

  def test_block_gets_keywords_and_its_value_returns
    r = @cell.run('SB.call("weather.today", city: "Oslo")')
    assert_equal({ "city" => "Oslo", "days" => 1, "sky" => "clear" }, r.value)
    assert_equal %w[a b], @cell.run('SB.call("whole", b: 1, a: 2)').value
  end

  def test_python_guest_calls_a_ruby_block
    CodeCell::Cell.open(language: :python, pool: 0) do |cell|
      cell.tool("add") { |a:, b:| a + b }
      assert_equal 5, cell.run("sb.call('add', a=2, b=3)").value
    end
  end

  # Anything that answers #call, given to Cell.new.
  class Doubler
    def call(n:) = n * 2
  end

  def test_tools_given_to_new
    tools = { "double" => Doubler.new, "neg" => ->(n:) { -n },
              "described" => { description: "Adds one", call: ->(n:) { n + 1 } } }
    CodeCell::Cell.open(language: :ruby, pool: 0, tools: tools) do |cell|
      assert_equal [8, -4, 5], cell.run('[SB.call("double", n: 4), SB.call("neg", n: 4), SB.call("described", n: 4)]').value
      assert_includes cell.description, "Adds one"
    end
  end

  def test_an_exception_is_a_tool_error_in_the_guest
    r = @cell.run('begin; SB.call("boom"); rescue SB::ToolError => e; [e.class.name, e.message]; end')
    assert_equal "SB::ToolError", r.value[0]
    assert_match(/KeyError: no such key/, r.value[1])
    # Arguments its input_schema refuses never reach the block: the engine says which.
    r = @cell.run('begin; SB.call("weather.today", town: "x"); rescue SB::ToolError => e; e.message; end')
    assert_match(/arguments: the required "city" is missing/, r.value)
  end

  def test_a_block_that_ends_its_thread_is_a_tool_error
    @cell.tool("quit") { Thread.current.kill }
    r = @cell.run('begin; SB.call("quit"); rescue SB::ToolError => e; e.message; end')
    assert_equal "the tool's thread ended before it answered", r.value
  end

  def test_a_slow_block_is_answered_at_the_limit
    assert_equal "done", @cell.run('SB.call("slow", seconds: 0.2)').value
    r = @cell.run('begin; SB.call("slow", seconds: 5); rescue SB::ToolError => e; e.message; end')
    assert_match(/did not answer within 1500 ms/, r.value)
  end

  def test_calls_from_several_threads_at_once
    threads = 6.times.map do |i|
      Thread.new { @cell.run(%(SB.call("slow", seconds: 0.3) + SB.call("weather.today", city: "c#{i}")["city"])).value }
    end
    assert_equal 6.times.map { |i| "donec#{i}" }, threads.map(&:value)
  end

  def test_the_description_lists_the_tools
    assert_includes @cell.description, "## Tools"
    assert_includes @cell.description, "weather.today"
    assert_includes @cell.description, "The weather in a city"
    assert_equal 4, @cell.info[:tools]
  end

  def test_a_block_without_a_schema_is_described_from_its_keywords
    { ruby: 'SB.call("forecast", city: any JSON, days: any JSON?)',
      python: 'sb.call("forecast", city=any JSON, days=any JSON?)' }.each do |language, call|
      CodeCell::Cell.open(language: language, pool: 0) do |cell|
        cell.tool("forecast", description: "The forecast") { |city:, days: 1| "#{city}: #{days} days" }
        cell.tool("given", input_schema: { type: "object", properties: { town: { type: "string" } } }) { |city: nil, **| city }
        cell.tool("any") { |**opts| opts.keys }
        text = cell.description
        assert_includes text, "### forecast\n\nThe forecast\n\n    #{call}\n"
        assert_includes text, "- `city` (any JSON, required)\n- `days` (any JSON, optional)"
        # An explicit schema still wins.
        given = text[text.index("### given")..]
        assert_includes given.split("\n\n")[1], "town"
        refute_includes given.split("\n\n")[1], "city"
      end
    end
    @cell.tool("forecast") { |city:, days: 1| "#{city}: #{days} days" }
    assert_equal "Oslo: 2 days", @cell.run('SB.call("forecast", city: "Oslo", days: 2)').value
    assert_equal "Oslo: 1 days", @cell.run('SB.call("forecast", city: "Oslo")').value
    r = @cell.run('begin; SB.call("forecast", days: 2); rescue SB::ToolError => e; e.message; end')
    assert_match(/arguments: the required "city" is missing/, r.value)
    r = @cell.run('begin; SB.call("forecast", city: "Oslo", weeks: 2); rescue SB::ToolError => e; e.message; end')
    assert_match(/arguments: unknown key "weeks"/, r.value) # refused before the block runs
    # **rest takes other keys.
    @cell.tool("rest") { |city:, **rest| [city, rest.keys] }
    assert_equal ["Oslo", ["weeks"]], @cell.run('SB.call("rest", city: "Oslo", weeks: 2)').value
  end

  def test_bad_tools_are_refused
    assert_raises(ArgumentError) { @cell.tool("boom") { 1 } }
    assert_raises(ArgumentError) { @cell.tool("9lives") { 1 } }
    assert_raises(ArgumentError) { @cell.tool("nothing") }
  end
end
