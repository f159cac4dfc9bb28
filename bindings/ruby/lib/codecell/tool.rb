# frozen_string_literal: true

require "codecell/host_tools"

module CodeCell
  # RubyLLM's tool base class when RubyLLM was loaded before codecell, so that subclasses of
  # CodeCell::Tool go straight into chat.with_tools; Object otherwise.
  TOOL_BASE = defined?(::RubyLLM::Tool) ? ::RubyLLM::Tool : Object

  # The seed's DSL: a tool a model calls with one argument, `code`, run in a cell whose folders
  # the class declares.
  #
  #   class Analytics < CodeCell::Tool
  #     mount    source: "data/input", dest: "/data",      description: "CSV files (read only)"
  #     mount_rw source: "workspace",  dest: "/workspace", description: "Write reports here"
  #   end
  #   Analytics.new.call("Dir.children('/data')") # => {status: "ok", value: [...]}
  class Tool < TOOL_BASE
    DEFAULT_TIMEOUT_MS = 30_000
    DEFAULT_FUEL_MS = 10_000

    Mount = Struct.new(:source, :dest, :mode, :description, keyword_init: true) do
      def payload
        { source: source, dest: dest, mode: mode, description: description }
      end
    end
    HostTool = Struct.new(:name, :description, :input_schema, :block, keyword_init: true)
    extend HostTools::ClassMethods # tools, mcps
    include HostTools::InstanceMethods # add_tools, add_mcps, and an instance's own cell

    class << self
      # The tool's name: the underscored class name, without a trailing "_tool"
      # (SalesAnalytics → sales_analytics, WeatherTool → weather).
      def tool_name
        leaf = name.to_s.split("::").last
        return "" unless leaf

        leaf.gsub(/([A-Z]+)([A-Z][a-z])/, '\1_\2').gsub(/([a-z\d])([A-Z])/, '\1_\2')
            .tr("-", "_").downcase.delete_suffix("_tool")
      end

      # A read-only folder. source: relative to the working directory now, or absolute.
      def mount(source:, dest:, description: nil)
        add_mount(source, dest, "ro", description)
      end

      # A read-write folder: the guest may change what is in it.
      def mount_rw(source:, dest:, description: nil)
        add_mount(source, dest, "rw", description)
      end

      def mounts
        @mounts ||= []
      end

      # :ruby (the default) or :python.
      def language(value = nil)
        return @language || :ruby if value.nil?

        raise ArgumentError, "language must be :ruby or :python" unless %i[ruby python].include?(value.to_sym)

        changed { @language = value.to_sym }
      end

      # The wall clock of one run (default 30,000 ms).
      def timeout_ms(value = nil)
        return @timeout_ms || DEFAULT_TIMEOUT_MS if value.nil?

        changed { @timeout_ms = positive(:timeout_ms, value) }
      end

      # The CPU budget of one run (default 10,000 ms): the seed's fuel.
      def fuel_ms(value = nil)
        return @fuel_ms || DEFAULT_FUEL_MS if value.nil?

        changed { @fuel_ms = positive(:fuel_ms, value) }
      end

      # Any other limit of CodeCell::Cell (memory_bytes:, pids:, pool:, …).
      def cell_options(**options)
        return @cell_options || {} if options.empty?

        changed { @cell_options = cell_options.merge(options) }
      end

      # A host tool the guest reaches with SB.call (see CodeCell::Cell#tool); listed under
      # "Tools" in the description. A block (`tool "name" { |city:| … }`), or one RubyLLM tool:
      # `tool Weather`, `tool "forecast" => Weather`, `tool forecast: Weather` (HostTools).
      def tool(name = nil, description: nil, input_schema: nil, **named, &block)
        entries = HostTools.declared(name, named, description: description, input_schema: input_schema,
                                                  block: block, taken: host_tools)
        changed { host_tools.concat(entries) }
      end

      def host_tools
        @host_tools ||= []
      end

      # The description is built from the mounts and tools (the seed's text: How to use,
      # Read-only folders, Read-write folders, Tools); it cannot be set by hand.
      def description(text = nil)
        if text
          raise ArgumentError, "#{self} builds the tool description from the declared mounts; " \
                               "the description is fixed and cannot be set by hand"
        end

        HostTools.describe(cell.description, mcp_servers)
      end

      # The JSON Schema of the one argument.
      def input_schema
        { "type" => "object",
          "properties" => { "code" => { "type" => "string", "description" => code_description } },
          "required" => ["code"] }
      end

      def code_description
        "Complete #{language == :python ? "Python" : "Ruby"} script to execute in the sandbox"
      end

      # Starts the cell's sandboxes ahead of the first call.
      def warmup
        cell.warmup
        self
      end

      # The class's cell, made on first use and shared by its instances.
      def cell
        (@cell_lock ||= Mutex.new).synchronize do
          @cell ||= build_cell
        end
      end

      # Closes the class's cell (a later call makes a new one).
      def close
        (@cell_lock ||= Mutex.new).synchronize do
          @cell&.close
          @cell = nil
        end
      end

      def inherited(subclass)
        super
        subclass.instance_variable_set(:@mounts, mounts.dup)
        subclass.instance_variable_set(:@host_tools, host_tools.dup)
        subclass.instance_variable_set(:@mcp_servers, mcp_servers.dup)
        %i[@language @timeout_ms @fuel_ms @cell_options].each do |ivar|
          subclass.instance_variable_set(ivar, instance_variable_get(ivar))
        end
        # RubyLLM keeps parameters per class: each subclass declares its own.
        declare_code_parameter(subclass) if defined?(::RubyLLM::Tool) && self <= ::RubyLLM::Tool
      end

      private

      def declare_code_parameter(klass)
        if klass.respond_to?(:parameter)
          klass.parameter :code, type: "string", description: klass.code_description, required: true
        else # RubyLLM before `parameter`
          klass.param :code, type: "string", desc: klass.code_description, required: true
        end
      end

      def positive(name, value)
        raise ArgumentError, "#{name} must be a positive Integer, not #{value.inspect}" unless value.is_a?(Integer) && value.positive?

        value
      end

      # A declaration changes the cell: the next use makes a new one.
      def changed
        result = yield
        close if @cell
        result
      end

      def add_mount(source, dest, mode, description)
        entry = Mount.new(source: File.expand_path(source.to_s), dest: dest.to_s, mode: mode,
                          description: description&.to_s)
        Native::Cell.check(*Cell.native_args(language, (mounts + [entry]).map(&:payload), {}))
        changed { mounts << entry }
      rescue ArgumentError => e
        raise ArgumentError, "Invalid mount #{source.to_s.inspect} => #{dest.to_s.inspect}: #{e.message}"
      end

      # extra: an instance's own host tools (HostTools::InstanceMethods).
      def build_cell(extra = [])
        cell = Cell.new(language: language, mounts: mounts.map(&:payload), timeout_ms: timeout_ms,
                        cpu_ms: fuel_ms, **cell_options)
        (host_tools + extra).each do |t|
          cell.tool(t.name, description: t.description, input_schema: t.input_schema, &t.block)
        end
        cell
      end
    end

    def name
      self.class.tool_name
    end

    def description
      HostTools.describe(cell.description, mcp_servers)
    end

    def input_schema
      self.class.input_schema
    end

    # Runs code and returns the seed's result hash (CodeCell::Result#to_h). Given a Hash, it is
    # RubyLLM's Tool#call(args), which calls #execute with the arguments as keywords.
    def call(code)
      return run(code) unless code.is_a?(Hash)

      defined?(super) ? super : execute(**code.transform_keys(&:to_sym))
    end

    # RubyLLM's entry point.
    def execute(code:)
      run(code)
    end

    private

    def run(code)
      cell.run(code).to_h
    end
  end
end
