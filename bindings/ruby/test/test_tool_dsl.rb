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

  # The engine knows its room for mounts only when it lays a sandbox out: the class finds it at
  # definition, by making (and closing) a cell of what it would be.
  def test_too_many_mounts_raise_at_definition
    klass = define(:Many)
    error = nil
    100.times do |i|
      FileUtils.mkdir_p(File.join(@root, "many/#{i}"))
      klass.mount(source: File.join(@root, "many/#{i}"), dest: "/m#{i}")
    rescue ArgumentError => e
      error = e
      break
    end
    refute_nil error, "100 mounts accepted"
    limit = error.message[/: too many mounts \(at most (\d+)\)\z/, 1]
    assert limit, error.message
    assert_equal Integer(limit), klass.mounts.size
    assert_equal({ status: "ok", value: Integer(limit) }, klass.new.call("Dir.children('/').grep(/\\Am\\d/).size"))
  end

  # The guest works in a folder as its owner when the host is root (idmapped mounts), as this
  # user otherwise.
  def test_folders_the_guest_cannot_use_raise_at_definition
    { "locked" => 0o000, "blind" => 0o311, "read_only" => 0o555 }.each do |name, mode|
      FileUtils.mkdir_p(File.join(@root, name))
      File.chmod(mode, File.join(@root, name))
    end
    e = assert_raises(ArgumentError) { define(:Locked) { mount source: "locked", dest: "/l" } }
    assert_match(/: source #{Regexp.escape(@root)}\/locked lacks read and search permission for /, e.message)
    e = assert_raises(ArgumentError) { define(:Blind) { mount source: "blind", dest: "/b" } }
    assert_match(/lacks read permission for /, e.message)
    e = assert_raises(ArgumentError) { define(:Unwritable) { mount_rw source: "read_only", dest: "/r" } }
    assert_match(/lacks write permission for /, e.message)
    klass = define(:ReadOnly) { mount source: "read_only", dest: "/r" }
    assert_equal "ok", klass.new.call("Dir.children('/r')")[:status]
  end

  def test_the_seeds_reserved_trees
    %w[/work /work/x /usr /usr/share /src /src/app].each do |dest|
      e = assert_raises(ArgumentError, dest) { define(:Reserved) { mount source: "other", dest: dest } }
      assert_match(%r{\AInvalid mount "other" => "#{dest}": .*overlaps the reserved /(work|usr|src)\z}, e.message)
    end
    assert_equal ["/srcs"], define(:Near) { mount source: "other", dest: "/srcs" }.mounts.map(&:dest)
  end

  def test_a_refused_declaration_changes_nothing
    klass = analytics.warmup
    cell = klass.cell
    text = klass.description
    Dir.chdir(@root) do
      assert_raises(ArgumentError) { klass.mount(source: "other", dest: "/src/app") }
      assert_raises(ArgumentError) { klass.mount(source: "nope", dest: "/n") }
    end
    assert_raises(ArgumentError) { klass.language(:cobol) }
    assert_raises(ArgumentError) { klass.cell_options(limits: { pids: 0 }) }
    assert_raises(ArgumentError) { klass.cell_options(bogus: 1) }
    assert_raises(ArgumentError) { klass.timeout_ms(0) }
    assert_same cell, klass.cell
    refute cell.closed?
    assert_equal text, klass.description
    assert_equal %w[/data /workspace], klass.mounts.map(&:dest)
    assert_equal({}, klass.cell_options)
  end

  def test_checking_declarations_leaves_nothing_running
    threads = os_threads
    processes = descendants
    define(:Checked) do
      mount source: "other", dest: "/o"
      mount_rw source: "workspace", dest: "/w"
      language :python
      cell_options limits: { pids: 16 }
    end
    wait_until { os_threads <= threads && descendants <= processes }
  end

  # The seed: execute never raises into the chat's loop.
  def test_a_sandbox_that_cannot_be_made_is_the_seeds_sandbox_error
    gone = File.join(@root, "gone")
    Dir.mkdir(gone)
    klass = define(:Gone) { mount source: "gone", dest: "/g" }
    Dir.rmdir(gone)
    tool = klass.new
    result = tool.call("1 + 1")
    assert_equal %i[status error], result.keys
    assert_equal "sandbox_error", result[:status]
    assert_equal %i[class message], result[:error].keys
    assert_equal "ArgumentError", result[:error][:class]
    assert_includes result[:error][:message], "#{gone} does not exist"
    assert_equal result, tool.execute(code: "1 + 1")
    assert_equal result, tool.call({ "code" => "1 + 1" }, tool_call: nil)
    assert_equal result, JSON.parse(result.to_s, symbolize_names: true) # to_s: what RubyLLM 1.x sends
    assert_includes klass.description, "Executes Ruby code" # the description does not raise either
    refute_includes klass.description, "`/g`" # never read before: the language's, no folders
    known = define(:Known) { mount source: "other", dest: "/o" }
    text = known.description
    FileUtils.rm_rf(File.join(@root, "other"))
    assert_equal text, known.description # read before: the last one
    Dir.mkdir(gone) # back: the next call makes the cell
    assert_equal({ status: "ok", value: 2 }, tool.call("1 + 1"))
  end

  # RubyLLM's entry points, as its chat calls them (test_ruby_llm.rb runs a chat).
  def test_rubyllms_entry_points
    tool = analytics.new
    assert_equal({ status: "ok", value: 1 }, tool.call({ "code" => "Dir.children('/data').size" }, tool_call: Object.new))
    assert_equal({ status: "ok", value: 1 }, tool.call({ code: "Dir.children('/data').size" }))
    assert_equal({ status: "ok", value: 2 }, tool.execute(code: "1 + 1", tool_call: Object.new))
    assert_equal({ error: "Invalid tool arguments: missing keyword: code" }, tool.call({}))
    assert_equal({ error: "Invalid tool arguments: missing keyword: code" }, tool.call(nil))
    assert_equal({ error: "Invalid tool arguments: unknown keyword: path" }, tool.call({ "code" => "1", "path" => "/" }))
    assert_equal({ error: "Invalid tool arguments: code must be a String, not Array" }, tool.call({ "code" => ["1"] }))
    assert_raises(ArgumentError) { tool.call({ "code" => "1" }, bogus: 1) } # as RubyLLM's own call
    assert_equal "analytics", tool.name
    assert_equal analytics.description, tool.description
    assert_equal tool.input_schema, tool.parameters_schema
    assert_equal tool.input_schema, tool.params_schema
    assert_equal false, tool.input_schema["additionalProperties"]
    assert_equal %i[code], tool.parameters.keys
    assert_equal ["string", true], [tool.parameters[:code].type, tool.parameters[:code].required]
    assert_equal tool.parameters, tool.declared_parameters
    assert_equal({}, tool.provider_options)
    assert_equal({}, tool.provider_params)
    assert_equal false, tool.requires_approval?
    assert_nil tool.approval_resolver
  end
end
