# frozen_string_literal: true

module CodeCell
  # What one run or session eval gave back (docs/results.md in the repository).
  class Result
    # :ok, :error, :timeout, :fuel_exhausted, :memory_limit or :sandbox_error
    attr_reader :status
    # Captured output ("" when none).
    attr_reader :stdout, :stderr
    # For any status but :ok: a Hash ("class", "message", "backtrace") for :error, a sentence
    # for the others. nil for :ok.
    attr_reader :error
    # Optional layers this host lacks (for the operator).
    attr_reader :warnings

    def initialize(native, model_chars)
      @native = native
      @model_chars = model_chars
      @data = JSON.parse(native.to_json)
      @status = @data.fetch("status").to_sym
      @stdout = @data.fetch("stdout", "")
      @stderr = @data.fetch("stderr", "")
      @error = @data["error"]
      @warnings = @data.fetch("warnings", [])
    end

    def ok?
      @status == :ok
    end

    # The value of the last expression (nil unless :ok), read from the exact JSON the guest
    # gave: integers of any size, and NaN and the infinities as Floats.
    def value
      return @value if defined?(@value)

      text = @native.value_json
      @value = text && Result.floats(JSON.parse(text))
    end

    # duration_ms, cpu_ms, and memory_peak_bytes when the host measured it.
    def timings
      @data.slice("duration_ms", "cpu_ms", "memory_peak_bytes").transform_keys(&:to_sym)
    end

    def exit_status
      @data["exit_status"]
    end

    def cancelled?
      @data["cancelled"] == true
    end

    # A session eval's: why the session's state (variables, definitions, /work) was lost — this
    # eval ended it, or its kernel had ended since the last eval — or nil when it was not.
    def state_lost
      @data["state_lost"]
    end

    # A parked session's restore before this eval: {"evals" => n, "ms" => m}, false when it
    # stopped (#state_lost says why), nil when there was none.
    def restored
      @data["restored"]
    end

    # Why the session can no longer be parked (its journal went over its bound), or nil.
    def not_restorable
      @data["not_restorable"]
    end

    # A session eval's: what its threads raised into the main thread or signalled between
    # evals, ignored (the state was kept): [{"class" => …, "message" => …}].
    def idle_interrupts
      @data.fetch("idle_interrupts", [])
    end

    # [[mime_type, bytes], …]: the pictures the run handed back.
    def images
      @native.images
    end

    # [[name, mime_type, bytes], …]: the other files the code wrote to the cell's
    # output_folder, typed by the host from their bytes (docs/results.md).
    def files
      @native.files
    end

    # A network cell's connections through its proxy: [{"host" =>, "port" =>, "bytes_out" =>,
    # "bytes_in" =>} and "refused" => why when it was refused] (docs/network.md).
    def network
      @data.fetch("network", [])
    end

    # [{"name" => …, "reason" => …}, …]: the output folder's entries left out, the first 16.
    def files_omitted
      @data.dig("files_omitted", "files") || []
    end

    # The seed's result hash, what a model reads: {status:, value:, stdout:} for ok, {status:,
    # error:} otherwise, stdout and stderr when not empty, each cut to the cell's model_chars
    # with the *_truncated flags saying so.
    def to_h
      JSON.parse(@native.model_json(@model_chars, false)).transform_keys(&:to_sym)
    end

    # The whole result (docs/results.md), layers and timings included.
    def to_json(*_args)
      @native.to_json
    end

    def inspect
      "#<CodeCell::Result #{@status}#{ok? ? " value=#{value.inspect}" : " error=#{@error.inspect}"}>"
    end

    FLOATS = { "NaN" => Float::NAN, "Infinity" => Float::INFINITY, "-Infinity" => -Float::INFINITY }.freeze

    # JSON has no NaN or infinity: the guest tags them as {"$float": "NaN"}.
    def self.floats(value)
      case value
      when Hash
        if value.size == 1 && FLOATS.key?(value["$float"])
          FLOATS[value["$float"]]
        else
          value.transform_values { |v| floats(v) }
        end
      when Array then value.map { |v| floats(v) }
      else value
      end
    end
  end
end
