# frozen_string_literal: true

require "codecell/tool_contract"
require "codecell/host_tools"

module CodeCell
  # The seed's DSL: a tool a model calls with one argument, `code`, run in a cell whose folders
  # the class declares.
  #
  #   class Analytics < CodeCell::Tool
  #     mount    source: "data/input", dest: "/data",      description: "CSV files (read only)"
  #     mount_rw source: "workspace",  dest: "/workspace", description: "Write reports here"
  #   end
  #   Analytics.new.call("Dir.children('/data')") # => {status: "ok", value: [...]}
  #
  # Its base is RubyLLM::Tool when RubyLLM is loaded at the moment CodeCell::Tool is first used
  # (codecell.rb autoloads this file; require "codecell/ruby_llm" makes sure of it), Object
  # otherwise; either way it answers what RubyLLM's chat and providers read from a tool.
  class Tool < (defined?(::RubyLLM::Tool) ? ::RubyLLM::Tool : Object)
    # Without RubyLLM underneath: RubyLLM's tool interface, as its chat calls it (tool_contract.rb).
    include ToolContract unless defined?(::RubyLLM::Tool) && self < ::RubyLLM::Tool

    DEFAULT_TIMEOUT_MS = 30_000
    DEFAULT_FUEL_MS = 10_000
    # The seed's reserved trees that codecell's cells leave free (the engine refuses its own:
    # /work, /usr, /tmp, …). The seed's sandbox keeps its sources under /src; a declaration
    # means the same under both.
    SEED_RESERVED = ["/src"].freeze

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

        verify(language: value.to_sym)
        changed { @language = value.to_sym }
        # The code parameter's description names the language.
        declare_code_parameter(self) if ruby_llm_tool?
        @language
      end

      # The wall clock of one run (default 30,000 ms).
      def timeout_ms(value = nil)
        return @timeout_ms || DEFAULT_TIMEOUT_MS if value.nil?

        verify(timeout_ms: positive(:timeout_ms, value))
        changed { @timeout_ms = value }
      end

      # The CPU budget of one run (default 10,000 ms): the seed's fuel.
      def fuel_ms(value = nil)
        return @fuel_ms || DEFAULT_FUEL_MS if value.nil?

        verify(fuel_ms: positive(:fuel_ms, value))
        changed { @fuel_ms = value }
      end

      # Any other option of CodeCell::Cell.new (memory:, pool:, policy:, limits: {pids: …}, …).
      def cell_options(**options)
        return @cell_options || {} if options.empty?

        verify(cell_options: cell_options.merge(options))
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

        begin
          @description_text = HostTools.describe(cell.description, mcp_servers)
        rescue StandardError
          # No cell can be made now (a folder gone since the class was defined): a chat still
          # reads a description, the last one, or the language's without the folders; the
          # runs answer sandbox_error naming what is wrong.
          @description_text ||= begin
            fallback = build_cell(mounts: [])
            fallback.description
          rescue StandardError => e # no cell at all on this host
            "Executes #{language == :python ? "Python" : "Ruby"} code in a sandbox, which cannot be made now: #{e.message}"
          ensure
            fallback&.close
          end
        end
      end

      # The JSON Schema of the one argument (no other is taken).
      def input_schema
        { "type" => "object",
          "properties" => { "code" => { "type" => "string", "description" => code_description } },
          "required" => ["code"], "additionalProperties" => false }
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
        declare_code_parameter(subclass) if ruby_llm_tool?
      end

      private

      def ruby_llm_tool?
        defined?(::RubyLLM::Tool) && self <= ::RubyLLM::Tool ? true : false
      end

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
        @description_text = nil
        result
      end

      def add_mount(source, dest, mode, description)
        entry = Mount.new(source: File.expand_path(source.to_s), dest: dest.to_s, mode: mode,
                          description: description&.to_s)
        Native::Cell.check(*Cell.native_args(language, (mounts + [entry]).map(&:payload), {}))
        reserved = SEED_RESERVED.find { |tree| entry.dest == tree || entry.dest.start_with?("#{tree}/") }
        raise ArgumentError, "dest overlaps the reserved #{reserved}" if reserved

        refuse_unreachable(entry)
        verify(mounts: mounts + [entry])
        changed { mounts << entry }
      rescue ArgumentError => e
        raise ArgumentError, "Invalid mount #{source.to_s.inspect} => #{dest.to_s.inspect}: #{e.message}"
      end

      # The engine opens any folder that exists, but the guest works in it as the folder's
      # owner when this process is root (the mounts are idmapped), as this user otherwise: a
      # folder that user cannot list (or, read-write, cannot write) would fail every run.
      def refuse_unreachable(entry)
        needs = entry.mode == "rw" ? %w[read write search] : %w[read search]
        if Process.euid.zero?
          mode = File.stat(entry.source).mode
          bits = { "read" => 0o400, "write" => 0o200, "search" => 0o100 }
          missing = needs.reject { |n| mode & bits[n] != 0 }
          who = "its owner (the guest, as root)"
        else
          checks = { "read" => :readable?, "write" => :writable?, "search" => :executable? }
          missing = needs.reject { |n| File.public_send(checks[n], entry.source) }
          who = "this user (the guest)"
        end
        return if missing.empty?

        raise ArgumentError, "source #{entry.source} lacks #{missing.join(" and ")} permission for #{who}"
      end

      # Makes and closes a cell of the configuration the class would have with `changes`, no
      # sandbox started: what the engine finds only when it lays a sandbox out (more mounts than
      # it has room for, a folder it cannot open, a limit out of range) raises now, at
      # definition, not at the first run. A host that cannot make cells at all is not the
      # declaration's fault: execute answers sandbox_error there.
      def verify(**changes)
        Cell.new(**cell_arguments(**changes).merge(pool: 0)).close
      rescue CodeCell::Error
        nil
      end

      def cell_arguments(language: self.language, mounts: self.mounts, timeout_ms: self.timeout_ms,
                         fuel_ms: self.fuel_ms, cell_options: self.cell_options)
        { language: language, mounts: mounts.map(&:payload), timeout_ms: timeout_ms, cpu_ms: fuel_ms,
          **cell_options.except(:tools) }
      end

      # extra: an instance's own host tools (HostTools::InstanceMethods).
      def build_cell(extra = [], **changes)
        cell = Cell.new(**cell_arguments(**changes), tools: cell_options.fetch(:tools, {}))
        (host_tools + extra).each do |t|
          cell.tool(t.name, description: t.description, input_schema: t.input_schema, &t.block)
        end
        cell
      end
    end

    def name
      self.class.tool_name
    end

    # The class's description, or, with host tools or servers of this instance's own, its own
    # cell's; like the class's, it never raises (a chat reads it on every turn).
    def description
      return self.class.description if own_host_tools.empty? && own_mcp_servers.empty?

      HostTools.describe(cell.description, mcp_servers)
    rescue StandardError
      self.class.description
    end

    def input_schema
      self.class.input_schema
    end

    # Given a String: runs it and returns the seed's result hash. Anything else is the
    # arguments of a model's call, RubyLLM's Tool#call(args, tool_call:): RubyLLM's own (or,
    # without RubyLLM, ToolContract's) checks them and calls #execute with them as keywords.
    def call(code, **options)
      code.is_a?(String) ? run(code) : super
    end

    # RubyLLM's entry point: the seed's result hash (a ResultHash), never an exception. tool_call:
    # is RubyLLM's ToolCall, handed to an execute that declares it.
    def execute(code:, tool_call: nil) # rubocop:disable Lint/UnusedMethodArgument
      return ResultHash[error: "Invalid tool arguments: code must be a String, not #{code.class}"] unless code.is_a?(String)

      run(code)
    end

    # The seed's result hash, whose to_s is its JSON: what a model reads in every RubyLLM (1.x
    # makes the tool message of the result's to_s, 2.0 of its to_json).
    class ResultHash < Hash
      def to_s
        JSON.generate(self)
      end
    end

    private

    # A sandbox that cannot be made (a mounted folder deleted since the class was defined, a
    # host that has lost a layer the policy requires) is the seed's sandbox_error, not an
    # exception in the chat's loop.
    def run(code)
      ResultHash[cell.run(code).to_h]
    rescue StandardError => e
      message = e.message.dup.force_encoding(Encoding::UTF_8).scrub
      ResultHash[status: "sandbox_error", error: { class: e.class.name, message: message }]
    end
  end
end
