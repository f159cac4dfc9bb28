# frozen_string_literal: true

module CodeCell
  # The seed agent_jail's exceptions, under CodeCell (CodeCell::Error is the extension's).

  # The block passed its wall clock or its CPU budget (#cpu? says which).
  class TimeoutError < Error
    def initialize(message = nil, cpu: false)
      super(message)
      @cpu = cpu
    end

    def cpu?
      @cpu
    end
  end

  # The block passed its memory limit.
  class MemoryError < Error; end

  # The block touched a path its fs_allow / fs_read_allow lists do not grant.
  class FilesystemError < Error; end

  # The host lacks a layer the jail needs (or one on_unsupported: :raise asks for).
  class UnsupportedPlatformError < Error; end

  # The block raised (or its process died without an answer); the original is described, not
  # carried: its class need not exist in the parent.
  class SandboxError < Error
    attr_reader :original_class, :original_message, :original_backtrace

    def initialize(original_class:, original_message:, original_backtrace:)
      @original_class = original_class
      @original_message = original_message
      @original_backtrace = original_backtrace
      super("#{original_class}: #{original_message}")
    end
  end

  # CodeCell.configure's settings for CodeCell.jail: the seed's, plus the classes whose
  # objects a block's value may hold (see CodeCell::MarshalCheck).
  class Configuration
    VALID_ON_UNSUPPORTED = %i[warn raise ignore].freeze

    attr_accessor :default_timeout, :default_memory_mb, :default_fs_allow, :on_unsupported,
                  :trusted_classes

    def initialize
      @default_timeout = 30
      @default_memory_mb = 512
      @default_fs_allow = []
      @on_unsupported = :warn
      @trusted_classes = []
    end

    def validate!
      unless VALID_ON_UNSUPPORTED.include?(@on_unsupported)
        raise ArgumentError,
              "on_unsupported must be one of #{VALID_ON_UNSUPPORTED.inspect}, got #{@on_unsupported.inspect}"
      end
      raise ArgumentError, "default_timeout must be a positive number" unless positive?(@default_timeout)
      raise ArgumentError, "default_memory_mb must be a positive number" unless positive?(@default_memory_mb)
      raise ArgumentError, "default_fs_allow must be an Array of paths" unless @default_fs_allow.is_a?(Array)
      raise ArgumentError, "trusted_classes must be an Array" unless @trusted_classes.is_a?(Array)
    end

    private

    def positive?(value)
      value.is_a?(Numeric) && value.positive?
    end
  end

  class << self
    def configure
      yield configuration
      configuration.validate!
    end

    def configuration
      @configuration ||= Configuration.new
    end

    # Back to the defaults.
    def reset!
      @configuration = nil
    end
  end
end
