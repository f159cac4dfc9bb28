# frozen_string_literal: true

require_relative "helper"

# The seed's DSL: class Analytics < CodeCell::Tool.
class TestToolDsl < Minitest::Test
  include Helper

  def setup
    @root = Dir.mktmpdir
    File.chmod(0o755, @root)
    %w[data/input workspace other].each { |d| FileUtils.mkdir_p(File.join(@root, d)) }
    File.write(File.join(@root, "data/input/sales.csv"), "month,total\njan,10\n")
    File.chmod(0o777, File.join(@root, "workspace"))
    @defined = []
  end

  def teardown
    @defined.each(&:close)
    FileUtils.rm_rf(@root)
  end

  # A named subclass (the name gives the tool's name), defined in the folder the seed's
  # relative sources are relative to.
  def define(name, parent = CodeCell::Tool, &body)
    klass = Class.new(parent)
    self.class.send(:remove_const, name) if self.class.const_defined?(name, false)
    self.class.const_set(name, klass)
    Dir.chdir(@root) { klass.class_eval(&body) } if body
    @defined << klass
    klass
  end

  def analytics
    define(:Analytics) do
      mount    source: "data/input", dest: "/data",      description: "CSV files with the raw data (read only)"
      mount_rw source: "workspace",  dest: "/workspace", description: "Write generated reports and artifacts here"
    end
  end

  def test_the_seeds_example
    klass = analytics
    assert_equal "analytics", klass.tool_name
    assert_equal File.join(@root, "data/input"), klass.mounts.first.source # expanded at definition
    result = klass.new.call("File.write('/workspace/r.md', File.read('/data/sales.csv').lines.size.to_s); :done")
    assert_equal({ status: "ok", value: "done" }, result)
    assert_equal "2", File.read(File.join(@root, "workspace/r.md"))
    assert_equal "error", klass.new.call("File.write('/data/x', '')")[:status]
  end

  def test_the_description_is_the_seeds
    text = analytics.description
    assert text.start_with?("Executes Ruby code inside a secure sandbox and returns what it produced.\n\n## How to use\n")
    assert_includes text, "\n\n## Read-only folders (readable, never writable)\n- `/data` — CSV files with the raw data (read only)"
    assert_includes text, "\n\n## Read-write folders (readable and writable)\n- `/workspace` — Write generated reports and artifacts here"
    refute_includes text, "## Tools"
    assert_raises(ArgumentError) { analytics.description("by hand") }

    with_tool = define(:WithTools, analytics) do
      tool("lookup", description: "Looks a thing up") { |key:| key.upcase }
    end
    assert_includes with_tool.description, "## Tools"
    assert_includes with_tool.description, "Looks a thing up"
    assert_equal "K", with_tool.new.call('SB.call("lookup", key: "k")')[:value]
  end

  def test_names_from_class_names
    assert_equal "sales_analytics", define(:SalesAnalytics).tool_name
    assert_equal "weather", define(:WeatherTool).tool_name
    assert_equal "html_report", define(:HTMLReport).tool_name
    assert_equal "", Class.new(CodeCell::Tool).tool_name
  end

  def test_bad_declarations_raise_at_class_definition
    errors = {
      "missing folder" => proc { mount source: "nope", dest: "/data" },
      "reserved dest" => proc { mount source: "other", dest: "/usr/share/x" },
      "relative dest" => proc { mount source: "other", dest: "data" },
      "overlapping dest" => proc {
        mount source: "other", dest: "/data"
        mount source: "workspace", dest: "/data/sub"
      },
      "duplicate dest" => proc {
        mount source: "other", dest: "/data"
        mount_rw source: "workspace", dest: "/data"
      }
    }
    errors.each do |what, body|
      e = assert_raises(ArgumentError, what) { define(:Broken, &body) }
      assert_match(/\AInvalid mount /, e.message, what)
    end
    # A failed declaration leaves the class as it was.
    klass = define(:Kept) { mount source: "other", dest: "/o" }
    assert_raises(ArgumentError) { Dir.chdir(@root) { klass.mount(source: "other", dest: "/o") } }
    assert_equal ["/o"], klass.mounts.map(&:dest)
  end

  def test_subclasses_inherit_their_parents_mounts
    parent = analytics
    child = define(:Child, parent) { mount source: "other", dest: "/other", description: "more" }
    assert_equal %w[/data /workspace /other], child.mounts.map(&:dest)
    assert_equal %w[/data /workspace], parent.mounts.map(&:dest)
    assert_includes child.description, "- `/other` — more"
    assert_equal 1, child.new.call("Dir.children('/data').size")[:value]
  end

  def test_limits_default_to_the_seeds_and_apply
    klass = analytics
    assert_equal 30_000, klass.timeout_ms
    assert_equal 10_000, klass.fuel_ms
    quick = define(:Quick, klass) { fuel_ms 300 }
    assert_equal 30_000, quick.timeout_ms
    assert_equal "fuel_exhausted", quick.new.call("loop {}")[:status]
    assert_raises(ArgumentError) { quick.timeout_ms(-1) }
  end

  def test_warmup_and_python
    klass = define(:PyAnalytics) do
      language :python
      mount source: "data/input", dest: "/data"
    end
    assert_same klass, klass.warmup
    assert_operator klass.cell.info[:pool_ready], :>, 0
    assert_equal ["sales.csv"], klass.new.call("import os\nos.listdir('/data')")[:value]
    assert_includes klass.description, "Executes Python code"
    assert_equal "Complete Python script to execute in the sandbox",
                 klass.input_schema["properties"]["code"]["description"]
  end
end
