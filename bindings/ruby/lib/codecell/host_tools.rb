# frozen_string_literal: true

module CodeCell
  # Host tools from what Ruby users already have, in ruby_llm-code_mode 0.4's spelling: RubyLLM
  # tools (classes, instances, or anything that answers RubyLLM's tool methods) and every tool of
  # a ruby_llm-mcp client, bound into a CodeCell::Tool's cell so that the guest reaches them with
  # SB.call. Nothing here needs RubyLLM: tools are recognised by their methods.
  #
  #   class Research < CodeCell::Tool
  #     tools Weather, Search.new, "forecast" => Weather
  #     mcps  docs_client, LinearServer, user: current_user
  #   end
  #
  # Every declaration is checked whole before anything changes (the names by the engine itself):
  # a call that fails leaves the class, or the instance, as it was.
  module HostTools
    MAX = 64 # host tools of one class (with its instance's own): the seed's limit
    # RubyLLM's ways of saying what a tool takes, newest first after the two that describe MCP
    # tools exactly (ruby_llm-mcp's params_schema, which RubyLLM 1.9-1.15 tools also have; under
    # RubyLLM 1.16 an MCP tool's parameters_schema is inferred from `execute(**params)` and is
    # empty).
    SCHEMA_METHODS = %i[params_schema input_schema parameters_schema parameters].freeze
    USAGE = 'give RubyLLM tools (classes or instances), "name" => tool pairs, or name: tool'
    Server = Struct.new(:name, :instructions, :client, keyword_init: true)

    class << self
      # The entries of `tool`: a block (the name, and optionally description: and input_schema:),
      # or exactly one RubyLLM tool, named or not.
      def declared(name, named, description:, input_schema:, block:, taken:)
        if block
          raise ArgumentError, "tool: give the block's tool a name" if name.nil? || !named.empty?

          entry = Tool::HostTool.new(name: name.to_s, description: description&.to_s,
                                     input_schema: input_schema, block: block)
          return checked(taken, [entry])
        end
        unless description.nil? && input_schema.nil?
          raise ArgumentError, "tool #{name}: description: and input_schema: go with a block; a RubyLLM tool brings its own"
        end
        raise ArgumentError, "tool #{name}: give a block, or a tool (tool \"#{name}\" => Weather)" if name.is_a?(String) || name.is_a?(Symbol)

        items = name.nil? ? [] : [name]
        count = (name.is_a?(Hash) ? name.size : items.size) + named.size
        raise ArgumentError, "tool takes one tool (#{USAGE}); tools takes several" unless count == 1

        bind(items, named, taken: taken)
      end

      # The entries of `tools` / `add_tools`: classes (made once, here), instances, arrays of
      # them, and "name" => tool pairs.
      def bind(items, named, taken:)
        pairs = []
        items.flatten(1).each do |item|
          item.is_a?(Hash) ? item.each { |n, t| pairs << [n.to_s, t] } : pairs << [nil, item]
        end
        named.each { |n, t| pairs << [n.to_s, t] }
        raise ArgumentError, "tools: #{USAGE}" if pairs.empty?

        pairs.each { |_, bound| tool_kind!(bound) } # before any class is made
        checked(taken, pairs.map { |name, bound| entry_for(instance_of(bound), name) })
      end

      # The servers and entries of `mcps` / `add_mcps`: clients as they are, classes made with
      # the keywords (LinearServer.new(user: current_user)). Each server's tools are listed now;
      # a server made here is stopped again when the call fails.
      def connect(servers, inputs, taken:)
        made = []
        flat = servers.flatten(1)
        raise ArgumentError, "mcps: give MCP clients (RubyLLM::MCP.client(...)) or classes of them" if flat.empty?
        unless inputs.empty? || flat.all?(Class)
          raise ArgumentError, "mcps: keywords (#{inputs.keys.join(", ")}) are for server classes, which are made with them"
        end

        flat.each { |server| server_kind!(server) }
        found = []
        entries = []
        flat.each do |server|
          client = server.is_a?(Class) ? make(server, inputs).tap { |c| made << c } : server
          found << Server.new(name: client.name.to_s, instructions: instructions_of(client), client: client)
          listed(client).each do |tool|
            name = tool.respond_to?(:name) ? tool.name.to_s : ""
            # A name taken already is the server's own: "<server>_<tool>" (the seed's rule).
            name = "#{client.name}_#{name}" if (taken.map(&:name) + entries.map(&:name)).include?(name) && !client.name.to_s.empty?
            entries << entry_for(tool, name, mcp: true)
          end
        end
        [found, checked(taken, entries)]
      rescue Exception # rubocop:disable Lint/RescueException -- nothing made here is left running
        made.each do |client|
          client.stop if client.respond_to?(:stop)
        rescue StandardError
          nil
        end
        raise
      end

      # The description a model sees: the cell's (folders, then host tools), then the servers'
      # instructions under "## Server notes" (the seed's order).
      def describe(text, servers)
        notes = servers.filter_map do |server|
          "- **#{server.name}** — #{server.instructions}" unless server.instructions.empty?
        end
        notes.empty? ? text : "#{text}\n\n## Server notes\n#{notes.join("\n")}"
      end

      # What the guest gets from a RubyLLM tool: RubyLLM's own keyword check (its `call` runs it
      # from 1.14 on; for older tools and look-alikes the same rule runs here), then `call(args)`
      # as RubyLLM's Chat runs a tool (ruby_llm 1.16 lib/ruby_llm/chat.rb:1217), or `execute`
      # with symbol keys for a tool without `call`.
      def answer(tool, args)
        keywords = args.transform_keys(&:to_sym)
        unless tool.respond_to?(:validate_keyword_arguments, true)
          problem = keyword_problem(tool, keywords)
          return { error: "Invalid tool arguments: #{problem}" } if problem
        end
        value = tool.respond_to?(:call) ? tool.call(args) : tool.execute(**keywords)
        # RubyLLM 1.6-1.15's halt(message) (ruby_llm 1.6.0 lib/ruby_llm/tool.rb:36-47, 96-98) ends
        # a chat's turn; here it is the message.
        value.class.name.to_s.end_with?("Tool::Halt") && value.respond_to?(:content) ? value.content : value
      end

      # An MCP tool's answer as {text:, structured:, error:}. ruby_llm-mcp's tools answer
      # RubyLLM::MCP::Content (its text; structured content, checked against the tool's output
      # schema, as JSON text: lib/ruby_llm/mcp/tool.rb:76-87) or {error: "…"} (tool.rb:63-73);
      # a result object (content / structured_content / error?, or the seed's text / structured
      # / error?) is read as it is.
      def mcp_answer(tool, value)
        if value.respond_to?(:error?) && %i[structured_content structured content].any? { |m| value.respond_to?(m) }
          structured = %i[structured_content structured].find { |m| value.respond_to?(m) }
          text = value.respond_to?(:text) ? value.text : text_of(value.content)
          return { text: text, structured: structured && value.public_send(structured), error: value.error? ? true : false }
        end
        return { text: value, structured: nil, error: false } if value.is_a?(String)
        if value.is_a?(Hash)
          error = value[:error] || value["error"]
          return error ? { text: error.to_s, structured: nil, error: true } : { text: nil, structured: value, error: false }
        end
        return { text: nil, structured: value, error: false } unless value.respond_to?(:text)

        { text: value.text, structured: structured_of(tool, value.text), error: false }
      end

      private

      def checked(taken, entries)
        names = taken.map(&:name)
        entries.each do |entry|
          if names.include?(entry.name)
            raise ArgumentError, "host tool #{entry.name.inspect} is bound already (name the other one: tools \"other\" => tool)"
          end

          names << entry.name
        end
        raise ArgumentError, "too many host tools (#{names.size}); at most #{MAX} per tool class" if names.size > MAX

        engine_check!(entries)
        entries
      end

      # The engine's own rules for names and schemas (codecell_cell_add_tool), now rather than
      # at the first run: a scratch cell that starts no sandbox.
      def engine_check!(entries)
        native = Native::Cell.new("ruby", [], [], { pool: 0 })
        entries.each do |entry|
          schema = begin
            entry.input_schema && JSON.generate(entry.input_schema)
          rescue JSON::GeneratorError, TypeError => e
            raise ArgumentError, "tool #{entry.name.inspect}: its input schema is not JSON: #{e.message}"
          end
          native.add_tool(entry.name, entry.description, schema, "0")
        end
      ensure
        native&.close
      end

      def tool_kind!(bound)
        if (bound.is_a?(Class) && bound <= Tool) || bound.is_a?(Tool)
          raise ArgumentError, "#{bound.inspect} is a CodeCell::Tool: one cannot be a host tool of another " \
                               "(its code would run a sandbox from inside a tool call)"
        end
        return if tool_like?(bound.is_a?(Class) ? bound.instance_methods : bound.methods)

        raise ArgumentError, "#{bound.inspect} is not a tool: a host tool is a RubyLLM tool (class or instance), " \
                             "or anything with `execute`, `description` and one of #{SCHEMA_METHODS.join(", ")}"
      end

      def tool_like?(methods)
        methods.include?(:execute) && methods.include?(:description) && SCHEMA_METHODS.any? { |m| methods.include?(m) }
      end

      def instance_of(bound)
        bound.is_a?(Class) ? make(bound, {}) : bound
      end

      def make(klass, inputs)
        klass.new(**inputs)
      rescue StandardError => e
        raise ArgumentError, "#{klass}.new#{"(#{inputs.keys.map { |k| "#{k}:" }.join(", ")})" unless inputs.empty?} " \
                             "raised #{e.class}: #{e.message}"
      end

      # An MCP tool answers {text:, structured:, error:}, bound with its server or alone
      # (ruby_llm-mcp's tools, of every release, have the server's tool_response).
      def entry_for(tool, name, mcp: tool.respond_to?(:tool_response))
        name ||= name_of(tool)
        caller = mcp ? ->(args) { mcp_answer(tool, answer(tool, args)) } : ->(args) { answer(tool, args) }
        description = tool.description.to_s
        Tool::HostTool.new(name: name, description: description.empty? ? nil : description,
                           input_schema: schema_of(tool, name), block: caller)
      end

      # The class's leaf by RubyLLM's tool_name rules (MyApp::Tools::Weather → weather; ruby_llm
      # 1.16 lib/ruby_llm/tool.rb:77-81), unless the tool names itself otherwise than RubyLLM
      # would name it from the whole class name.
      def name_of(tool)
        own = tool.respond_to?(:name) ? tool.name : nil
        return own if own.is_a?(String) && !own.empty? && own != rubyllm_name(tool.class.name.to_s)

        leaf = rubyllm_name(tool.class.name.to_s.split("::").last.to_s)
        return leaf unless leaf.empty?

        raise ArgumentError, "#{tool.inspect} has no name (an anonymous class): name it, tools \"name\" => tool"
      end

      def rubyllm_name(class_name)
        ascii = class_name.dup.force_encoding(Encoding::UTF_8).unicode_normalize(:nfkd)
                          .encode("ASCII", replace: "").gsub(/[^a-zA-Z0-9_-]/, "-")
        ascii.gsub(/(?<=[a-z\d])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])/, "_").downcase.delete_suffix("_tool")
      end

      def schema_of(tool, name)
        source, schema = schema_source(tool)
        return nil if schema.nil?
        raise ArgumentError, "tool #{name.inspect}: its #{source} is a #{schema.class}, not a JSON Schema object" unless schema.is_a?(Hash)

        JSON.parse(JSON.generate(schema))
      rescue JSON::GeneratorError => e
        raise ArgumentError, "tool #{name.inspect}: its input schema is not JSON: #{e.message}"
      end

      # An MCP tool's own inputSchema before what RubyLLM would infer for it (ruby_llm-mcp
      # before 0.7 has only `parameters` and the raw tool_response).
      def schema_source(tool)
        return [:params_schema, tool.params_schema] if tool.respond_to?(:params_schema)

        raw = mcp_input_schema(tool)
        return [:tool_response, raw] if raw

        method = SCHEMA_METHODS.find { |m| tool.respond_to?(m) }
        schema = tool.public_send(method)
        [method, method == :parameters ? from_parameters(schema) : schema]
      end

      def mcp_input_schema(tool)
        response = tool.respond_to?(:tool_response) ? tool.tool_response : nil
        schema = response.is_a?(Hash) ? response["inputSchema"] : nil
        schema.is_a?(Hash) ? schema : nil
      end

      # RubyLLM before 1.9: `parameters` is {name => Parameter(name, type, description,
      # required)}, which the providers turned into a schema without additionalProperties (ruby_llm
      # 1.3.0 lib/ruby_llm/tool.rb:5-15, providers/openai/tools.rb), so that an unknown
      # argument reaches the keyword check below.
      def from_parameters(parameters)
        return nil unless parameters.respond_to?(:each_value)

        properties = {}
        required = []
        parameters.each_value do |param|
          property = { "type" => json_type(param.type) }
          property["description"] = param.description.to_s if param.description
          property["items"] = { "type" => "string" } if property["type"] == "array"
          properties[param.name.to_s] = property
          required << param.name.to_s if param.required
        end
        { "type" => "object", "properties" => properties, "required" => required }
      end

      # ruby_llm 1.16 lib/ruby_llm/tool.rb:390-400 (SchemaDefinition.map_type).
      def json_type(type)
        case type.to_s
        when "integer", "int" then "integer"
        when "number", "float", "double" then "number"
        when "boolean", "array", "object" then type.to_s
        else "string"
        end
      end

      # RubyLLM's check of the arguments against `execute`'s keywords (ruby_llm 1.16
      # lib/ruby_llm/tool.rb:319-352: validate_keyword_arguments, execute_keyword_signature),
      # its `tool_call:` keyword left out.
      def keyword_problem(tool, keywords)
        signature = tool.method(:execute).parameters.reject { |_, name| name == :tool_call }
        required = signature.filter_map { |kind, name| name if kind == :keyreq }
        optional = signature.filter_map { |kind, name| name if kind == :key }
        return nil if required.empty? && optional.empty? && signature.any? { |kind, _| %i[req opt rest].include?(kind) }

        missing = (required - keywords.keys).first
        return "missing keyword: #{missing}" if missing
        return nil if signature.any? { |kind, _| kind == :keyrest }

        unknown = (keywords.keys - required - optional).first
        "unknown keyword: #{unknown}" if unknown
      end

      def server_kind!(server)
        methods = server.is_a?(Class) ? server.instance_methods : server.methods
        return if methods.include?(:tools) && methods.include?(:name)

        raise ArgumentError, "#{server.inspect} is not an MCP client: mcps takes RubyLLM::MCP clients " \
                             "(RubyLLM::MCP.client(...)) or classes of them (anything with `name` and `tools`)"
      end

      def listed(client)
        tools = client.tools
        raise TypeError, "`tools` gave a #{tools.class}, not a list" unless tools.respond_to?(:to_a)

        tools.to_a
      rescue StandardError => e
        raise ArgumentError, "mcps: server #{client.name.to_s.inspect} could not list its tools: #{e.class}: #{e.message}"
      end

      def instructions_of(client)
        client.respond_to?(:instructions) ? client.instructions.to_s : ""
      end

      def text_of(content)
        items = content.is_a?(Array) ? content : [content].compact
        texts = items.filter_map { |c| c.is_a?(Hash) ? c["text"] || c[:text] : (c.respond_to?(:text) ? c.text : c.to_s) }
        texts.empty? ? nil : texts.join("\n")
      end

      def structured_of(tool, text)
        return nil unless text.is_a?(String) && tool.respond_to?(:output_schema) && tool.output_schema

        JSON.parse(text)
      rescue JSON::ParserError
        nil
      end
    end

    # `tools`, `mcps` and what they bound, on a CodeCell::Tool class.
    module ClassMethods
      # RubyLLM tools as host tools: `tools Weather, Search.new, "forecast" => Weather`.
      # Without arguments: the host tools bound (blocks included).
      def tools(*items, **named)
        return host_tools if items.empty? && named.empty?

        entries = HostTools.bind(items, named, taken: host_tools)
        changed { host_tools.concat(entries) }
      end

      # Every tool of MCP clients: `mcps docs, LinearServer, user: current_user`. Without
      # arguments: the servers bound.
      def mcps(*servers, **inputs)
        return mcp_servers if servers.empty? && inputs.empty?

        found, entries = HostTools.connect(servers, inputs, taken: host_tools)
        changed do
          host_tools.concat(entries)
          mcp_servers.concat(found)
        end
      end

      # ruby_llm-code_mode 0.2-0.3's spelling.
      alias_method :mcp, :mcps

      def mcp_servers
        @mcp_servers ||= []
      end
    end

    # add_tools / add_mcps: host tools of one instance, on top of its class's. Such an instance
    # runs in a cell of its own, made on its first run from the class's declarations then, and
    # closed by #close, by a later add_tools / add_mcps (the next run makes it anew), or when the
    # instance is garbage-collected.
    module InstanceMethods
      def add_tools(*items, **named)
        entries = HostTools.bind(items, named, taken: host_tools)
        own_changed { own_host_tools.concat(entries) }
      end

      def add_mcps(*servers, **inputs)
        found, entries = HostTools.connect(servers, inputs, taken: host_tools)
        own_changed do
          own_host_tools.concat(entries)
          own_mcp_servers.concat(found)
        end
      end

      # The class's host tools and this instance's own.
      def host_tools
        self.class.host_tools + own_host_tools
      end

      def mcp_servers
        self.class.mcp_servers + own_mcp_servers
      end

      # The cell this instance runs in: its class's, or its own when it has host tools of its own.
      def cell
        return self.class.cell if own_host_tools.empty?

        own_cell_lock.synchronize { @own_cell ||= self.class.send(:build_cell, own_host_tools) }
      end

      # Closes this instance's own cell, if it has one (the class's cell is the class's to close).
      def close
        own_cell_lock.synchronize do
          @own_cell&.close
          @own_cell = nil
        end
      end

      private

      def own_host_tools
        @own_host_tools ||= []
      end

      def own_mcp_servers
        @own_mcp_servers ||= []
      end

      def own_cell_lock
        @own_cell_lock ||= Mutex.new
      end

      def own_changed
        own_cell_lock # made before a second thread can race for it
        result = yield
        close
        result
      end
    end
  end
end
