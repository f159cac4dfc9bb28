# frozen_string_literal: true

# The seed agent_jail's API on top of CodeCell.jail: a user of the seed switches by requiring
# this file instead of "agent_jail"; AgentJail.run, AgentJail.configure and the AgentJail::
# exceptions behave as the seed's, behind codecell's walls (docs/jail.md).
require "codecell"

module AgentJail
  VERSION = CodeCell::VERSION

  # The same classes as CodeCell's: a rescue of either catches both.
  Error = CodeCell::Error
  TimeoutError = CodeCell::TimeoutError
  MemoryError = CodeCell::MemoryError
  FilesystemError = CodeCell::FilesystemError
  SandboxError = CodeCell::SandboxError
  UnsupportedPlatformError = CodeCell::UnsupportedPlatformError
  Configuration = CodeCell::Configuration

  class << self
    def configure(&block)
      CodeCell.configure(&block)
    end

    def configuration
      CodeCell.configuration
    end

    def reset!
      CodeCell.reset!
    end

    # The seed's options: timeout, cpu_timeout, memory_mb, fs_allow, fs_read_allow (and
    # codecell's network).
    def run(**options, &block)
      raise ArgumentError, "block required" unless block

      CodeCell.jail(**options, &block)
    end
  end
end
