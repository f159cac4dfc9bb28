# frozen_string_literal: true

require_relative "helper"
require "logger"
require "codecell/agent_jail"

# The seed agent_jail's README examples, unchanged but for the require line, through the
# drop-in (lib/codecell/agent_jail.rb).
class TestAgentJail < Minitest::Test
  include Helper

  # What the README's examples call.
  class SomeToolCall
    def self.execute(args)
      args.map { |a| a * 2 }
    end
  end

  # A tool whose call raises, as a model-driven one may.
  class Tool
    def call(args)
      raise KeyError, "no such record: #{args.inspect}"
    end
  end

  def setup
    AgentJail.reset!
  end

  def teardown
    AgentJail.reset!
    wait_until { descendants.zero? }
  end

  def args
    [1, 2, 3]
  end

  def tool
    @tool ||= Struct.new(:name) { def call(args) = args.sum }.new("sum")
  end

  def logger
    @logger ||= Logger.new(@log = StringIO.new)
  end

  def test_basic_timeout_and_memory
    result = AgentJail.run(timeout: 5, memory_mb: 256) do
      SomeToolCall.execute(args)
    end
    assert_equal [2, 4, 6], result
  end

  def test_with_filesystem_restrictions
    result = AgentJail.run(
      timeout: 10,
      memory_mb: 512,
      fs_allow: ["/app/tmp", "/app/uploads"],  # read-write
      fs_read_allow: ["/app/config"]           # read-only
    ) do
      tool.call(args)
    end
    assert_equal 6, result
  end

  def test_all_options
    result = AgentJail.run(
      timeout:      10,   # wall-clock seconds before child is killed (default: 30)
      cpu_timeout:  5,    # CPU seconds before child is killed (default: same as timeout)
      memory_mb:    256,  # address space limit in MB (default: 512)
      fs_allow:     ["/app/tmp"],    # read-write paths (default: [])
      fs_read_allow: ["/app/config"] # read-only paths (default: [])
    ) do
      tool.call(args)
    end
    assert_equal 6, result
  end

  def test_configuration
    AgentJail.configure do |c|
      c.default_timeout   = 30     # seconds
      c.default_memory_mb = 512    # MB
      c.default_fs_allow  = []
      c.on_unsupported    = :warn  # :warn (default), :raise, or :ignore
    end
    assert_equal 30, AgentJail.configuration.default_timeout
    assert_equal :warn, AgentJail.configuration.on_unsupported
    assert_equal 2, AgentJail.run { 1 + 1 }
  end

  def test_exceptions
    @tool = Tool.new
    begin
      AgentJail.run(timeout: 5) { tool.call(args) }
    rescue AgentJail::TimeoutError
      flunk "not a timeout"
    rescue AgentJail::MemoryError
      flunk "not a memory error"
    rescue AgentJail::FilesystemError
      flunk "not a filesystem error"
    rescue AgentJail::SandboxError => e
      logger.error("Tool call raised #{e.original_class}: #{e.original_message}")
      logger.error(e.original_backtrace.join("\n"))
    end
    assert_match(/Tool call raised KeyError: no such record: \[1, 2, 3\]/, @log.string)
    assert_match(/test_agent_jail\.rb/, @log.string)
  end

  def test_the_exception_table
    assert_raises(AgentJail::TimeoutError) { AgentJail.run(timeout: 0.5) { sleep } }
    assert_raises(AgentJail::MemoryError) { AgentJail.run(memory_mb: 64) { "x" * (400 << 20) } }
    assert_raises(AgentJail::FilesystemError) { AgentJail.run { File.read("/etc/shadow") } }
    [AgentJail::TimeoutError, AgentJail::MemoryError, AgentJail::FilesystemError, AgentJail::SandboxError,
     AgentJail::UnsupportedPlatformError].each { |k| assert_operator k, :<, AgentJail::Error }
    assert_operator AgentJail::Error, :<, StandardError
    assert_raises(ArgumentError) { AgentJail.run }
  end
end
