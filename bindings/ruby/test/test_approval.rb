# frozen_string_literal: true

require_relative "helper"

# Approval before effects through the gem: a tool marked approval: true writes a file on the
# host only when the cell's approve block answers true; a reason, an exception, a block that
# never answers, or none at all never runs it, and the guest (Ruby and Python) rescues the
# ToolError.
class ApprovalTest < Minitest::Test
  RESCUED = {
    ruby: "begin; SB.call('write', name: %p); rescue SB::ToolError => e; 'refused: ' + e.message; end",
    python: "try:\n    m = sb.call('write', name=%p)\nexcept sb.ToolError as e:\n    m = 'refused: ' + str(e)\nm",
  }.freeze

  def setup
    @dir = Dir.mktmpdir
    @cells = []
  end

  def teardown
    @cells.each(&:close)
    FileUtils.rm_rf(@dir)
  end

  def cell(language, approval_ms: 5000, &approve)
    dir = @dir
    c = CodeCell::Cell.new(language: language, pool: 0, limits: { approval_ms: approval_ms })
    c.tool("write", approval: true) do |name:|
      File.write(File.join(dir, File.basename(name)), "written")
      true
    end
    c.approve(&approve) if approve
    @cells << c
    c
  end

  def call(cell, language, name)
    cell.run(format(RESCUED.fetch(language), name)).value
  end

  def wrote?(name) = File.exist?(File.join(@dir, name))

  %i[ruby python].each do |language|
    define_method("test_#{language}_accepted") do
      asked = []
      c = cell(language) { |tool, args| asked << [tool, args]; true }
      assert_includes c.description, "Needs approval"
      assert_equal true, call(c, language, "ok")
      assert wrote?("ok")
      assert_equal [["write", { "name" => "ok" }]], asked
    end

    define_method("test_#{language}_declined_with_a_reason") do
      c = cell(language) { |_tool, _args| "not today" }
      assert_equal 'refused: approval declined: the call of "write" was not allowed: not today; it did not run',
                   call(c, language, "no")
      refute wrote?("no")
      c.approve { |_tool, _args| :yes } # truthy, but not true: no approval
      assert_match(/\Arefused: approval declined/, call(c, language, "no"))
      refute wrote?("no")
    end

    define_method("test_#{language}_without_an_approve_block") do
      c = cell(language)
      assert_match(/\Arefused: approval needed: "write" runs only when/, call(c, language, "unasked"))
      refute wrote?("unasked")
    end

    define_method("test_#{language}_a_block_that_raises") do
      c = cell(language) { |_tool, _args| raise IOError, "the approver is down" }
      assert_equal 'refused: approval needed: "write" could not be approved: IOError: the approver is down; it did not run',
                   call(c, language, "err")
      refute wrote?("err")
    end

    define_method("test_#{language}_a_block_that_never_answers") do
      c = cell(language, approval_ms: 400) { |_tool, _args| sleep 30 }
      start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      value = call(c, language, "late")
      assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - start, :>=, 0.35
      assert_match(/\Arefused: approval needed: .*400 ms/, value)
      refute wrote?("late")
    end
  end
end
