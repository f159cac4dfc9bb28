# frozen_string_literal: true

require_relative "helper"

# Host tools from RubyLLM tools and ruby_llm-mcp clients (CodeCell::HostTools). RubyLLM and
# ruby_llm-mcp cannot be installed here; the stand-ins below are written from their real
# sources, method by method, and live in a module of their own so that the rest of the suite
# still runs without RubyLLM (codecell recognises tools by their methods, never by RubyLLM's
# constants).
module StandIn
  # ruby_llm 1.16 (crmne/ruby_llm fb5a49bf) lib/ruby_llm/tool.rb.
  class Parameter # tool.rb:6-15
    attr_reader :name, :type, :description, :required

    def initialize(name, type: "string", description: nil, required: true)
      @name = name
      @type = type
      @description = description
      @required = required
    end
  end

  class Tool
    class << self
      def inherited(subclass) # tool.rb:59-70: parameters are per class
        super
        subclass.instance_variable_set(:@declared_parameters, declared_parameters.dup)
        subclass.instance_variable_set(:@description, @description)
      end

      def tool_name # tool.rb:77-81 (Utils.underscore: utils.rb:5, 25-27)
        normalized = name.to_s.dup.force_encoding("UTF-8").unicode_normalize(:nfkd)
        ascii_name = normalized.encode("ASCII", replace: "").gsub(/[^a-zA-Z0-9_-]/, "-")
        ascii_name.gsub(/(?<=[a-z\d])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])/, "_").downcase.delete_suffix("_tool")
      end

      def description(text = nil) # tool.rb:94-98
        return @description unless text

        @description = text
      end

      def parameter(name, **options) # tool.rb:111-113
        declared_parameters[name] = Parameter.new(name, **options)
      end

      def declared_parameters # tool.rb:115-117
        @declared_parameters ||= {}
      end

      def parameters(schema) # tool.rb:136-145, a schema Hash only (no schematist here)
        @parameters_schema_definition = schema
        self
      end

      attr_reader :parameters_schema_definition
    end

    def name = self.class.tool_name # tool.rb:235-237
    def description = self.class.description # tool.rb:240-242

    # tool.rb:264-277, with SchemaDefinition.from_parameters (tool.rb:363-388), whose keys are
    # strings after json_schema's deep_stringify_keys (tool.rb:415-420).
    def parameters_schema
      return JSON.parse(JSON.generate(self.class.parameters_schema_definition)) if self.class.parameters_schema_definition

      params = self.class.declared_parameters.any? ? self.class.declared_parameters : inferred_parameters
      properties = params.to_h do |name, p|
        [name.to_s, { "type" => p.type.to_s == "integer" ? "integer" : "string", "description" => p.description }.compact]
      end
      { "type" => "object", "properties" => properties,
        "required" => params.select { |_, p| p.required }.keys.map(&:to_s),
        "additionalProperties" => false, "strict" => true }
    end

    def call(args, tool_call: nil) # tool.rb:279-290 (the debug logging left out)
      normalized_args = normalize_args(args)
      validation_error = validate_keyword_arguments(normalized_args)
      return { error: "Invalid tool arguments: #{validation_error}" } if validation_error

      normalized_args[:tool_call] = tool_call if execute_accepts_tool_call?
      execute(**normalized_args)
    end

    def execute(...) = raise(NotImplementedError, "Subclasses must implement #execute") # tool.rb:306-308

    # ruby_llm 1.6-1.15 (1.6.0 tool.rb:36-47, 96-98): an answer that ends the chat's turn.
    class Halt
      attr_reader :content

      def initialize(content) = (@content = content)
      def to_s = @content.to_s
    end

    def halt(message) = Halt.new(message)

    protected

    def normalize_args(args) # tool.rb:312-317
      return {} if args.nil?
      return args.transform_keys(&:to_sym) if args.respond_to?(:transform_keys)

      {}
    end

    def validate_keyword_arguments(arguments) # tool.rb:319-334
      required, optional, extra, positional = execute_keyword_signature
      return nil if required.empty? && optional.empty? && positional

      missing = (required - arguments.keys).first
      return "missing keyword: #{missing}" if missing
      return nil if extra

      unknown = (arguments.keys - (required + optional)).first
      return "unknown keyword: #{unknown}" if unknown

      nil
    end

    def execute_accepts_tool_call? # tool.rb:336-340
      method(:execute).parameters.any? { |kind, name| name == :tool_call && %i[keyreq key].include?(kind) }
    end

    def execute_keyword_signature # tool.rb:342-352
      signature = method(:execute).parameters.reject { |_, name| name == :tool_call }
      [signature.filter_map { |kind, name| name if kind == :keyreq },
       signature.filter_map { |kind, name| name if kind == :key },
       signature.any? { |kind, _| kind == :keyrest },
       signature.any? { |kind, _| %i[req opt rest].include?(kind) }]
    end

    def inferred_parameters # tool.rb:354-360
      required, optional, = execute_keyword_signature
      (required + optional).to_h { |name| [name, Parameter.new(name, required: required.include?(name))] }
    end
  end

  # ruby_llm 1.3.0 lib/ruby_llm/tool.rb: `param` (tool.rb:42-44, Parameter with desc:, 9-14),
  # class and instance `parameters` (46-48, 66-68), `name` from the whole class name (51-60),
  # and `call(args)` without any check of the keywords (70-75).
  class OldTool
    OldParameter = Struct.new(:name, :type, :description, :required)

    class << self
      def description(text = nil)
        return @description unless text

        @description = text
      end

      def param(name, type: "string", desc: nil, required: true)
        parameters[name] = OldParameter.new(name, type, desc, required)
      end

      def parameters = (@parameters ||= {})
    end

    def name
      self.class.name.unicode_normalize(:nfkd).encode("ASCII", replace: "").gsub(/[^a-zA-Z0-9_-]/, "-")
          .gsub(/([A-Z]+)([A-Z][a-z])/, '\1_\2').gsub(/([a-z\d])([A-Z])/, '\1_\2').downcase.delete_suffix("_tool")
    end

    def description = self.class.description
    def parameters = self.class.parameters
    def call(args) = execute(**args.transform_keys(&:to_sym))
  end

  # patvice/ruby_llm-mcp 4d10851 (v1.0.0+). A client (lib/ruby_llm/mcp/client.rb): `name`
  # (attr_reader, 10), `tools` (118-128: the server's tools, listed on first use), `stop` (76-78).
  # No `instructions` in the client; a server class may add one (the seed reads it).
  class Client
    attr_reader :name, :stopped

    def initialize(name:, tools: [], instructions: nil, fail_listing: false)
      @name = name
      @tools = tools
      @instructions = instructions
      @fail_listing = fail_listing
    end

    def tools(refresh: false)
      raise IOError, "connection refused" if @fail_listing

      _ = refresh
      @tools
    end

    def instructions = @instructions
    def stop = (@stopped = true)
  end

  # An MCP tool (lib/ruby_llm/mcp/tool.rb): a RubyLLM::Tool (27) with attr_readers name,
  # description, tool_response, output_schema (28-29), `params_schema` (53-55: the server's
  # inputSchema), and `execute(**params)` (57-95) answering {error: "…"} when the server failed
  # (63-66, 72-74), else an MCP::Content (content.rb: `text`), whose text is the structured
  # content as JSON when the tool has an output schema (76-87).
  class McpTool < Tool
    attr_reader :name, :description, :tool_response, :output_schema

    def initialize(name, description, input_schema, output_schema: nil, &server)
      super()
      @name = name
      @description = description
      @tool_response = { "name" => name, "inputSchema" => input_schema }
      @output_schema = output_schema
      @server = server
    end

    def params_schema = @tool_response["inputSchema"]

    def execute(**params)
      answer = @server.call(params)
      return { error: answer[:fail] } if answer[:fail]
      return Content.new(text: answer[:structured].to_json) if answer[:structured] && @output_schema

      Content.new(text: answer[:text])
    end
  end

  # An MCP tool of ruby_llm-mcp 0.6 (v0.6.0 lib/ruby_llm/mcp/tool.rb:27-52): no params_schema,
  # attr_readers `parameters` (Parameters made from the inputSchema) and `tool_response`; under
  # RubyLLM 1.16 it inherits a parameters_schema inferred from `execute(**params)`, which is empty.
  class OldMcpTool < Tool
    attr_reader :name, :description, :parameters, :tool_response

    def initialize(name, input_schema)
      super()
      @name = name
      @description = ""
      @tool_response = { "name" => name, "inputSchema" => input_schema }
      @parameters = input_schema["properties"].to_h { |key, _| [key.to_sym, Parameter.new(key.to_sym)] }
    end

    def execute(**params) = Content.new(text: params.to_json)
  end

  Content = Struct.new(:text, keyword_init: true) do # content.rb:5-16 (text, attachments)
    def attachments = []
    def to_s = text.to_s
  end
end

class TestHostTools < Minitest::Test
  include Helper

  module MyApp
    module Tools
      class Weather < StandIn::Tool
        description "The weather in a city"
        parameter :city, description: "the city"
        parameter :days, type: "integer", required: false

        def execute(city:, days: 1) = { "city" => city, "days" => days, "calls" => (@calls = (@calls || 0) + 1) }
      end
    end
  end

  class SearchTool < StandIn::Tool
    description "Searches"
    def execute(query:) = [query, query.class.name]
  end

  # Its schema makes `units` optional, but execute wants it: RubyLLM's own check answers.
  class Convert < StandIn::Tool
    parameters({ type: "object", properties: { city: { type: "string" }, units: { type: "string" } }, required: ["city"] })
    def execute(city:, units:) = "#{city} #{units}"
  end

  # The keywords at the top level are symbols; what is inside them is JSON data as parsed.
  class Keys < StandIn::Tool
    parameters({ type: "object", properties: { opts: { type: "object" } } })
    def execute(**given) = [given.keys.map(&:inspect), given[:opts].keys.map(&:inspect)]
  end

  # RubyLLM 1.16's reserved tool_call: keyword (tool.rb:294-305): no call here, so nil.
  class Audited < StandIn::Tool
    parameters({ type: "object", properties: { query: { type: "string" }, tool_call: {} }, required: ["query"] })
    def execute(query:, tool_call: :unset) = [query, tool_call.inspect]
  end

  class Stopper < StandIn::Tool
    def execute = halt("stop here")
  end

  class Boom < StandIn::Tool
    def execute = raise(KeyError, "no such key")
  end

  class Odd < StandIn::Tool
    def execute = { "object" => Object.new, "struct" => Struct.new(:a).new(1), "nan" => Float::NAN, "sym" => :s }
  end

  class HTTPProxyTool < StandIn::Tool
    def execute = 1
  end

  class Unmakeable < StandIn::Tool
    def initialize = raise(IOError, "no token")
    def execute = 1
  end

  # Its own to_json is read back; one that writes something else than JSON is its inspect.
  class Money
    def initialize(cents) = (@cents = cents)
    def to_json(*) = { cents: @cents, currency: "EUR" }.to_json
  end

  class Broken
    def to_json(*) = "not json"
    def inspect = "#<Broken>"
  end

  class Priced < StandIn::Tool
    def execute = [Money.new(250), Broken.new]
  end

  class Renamed < StandIn::Tool
    def name = "web_lookup"
    def execute(q:) = q.reverse
  end

  class Legacy < StandIn::OldTool
    description "An old-style tool"
    param :city, desc: "the city"
    def execute(city:) = "old #{city}"
  end

  # A look-alike: no RubyLLM at all, no `call`.
  class LookAlike
    def name = "look_alike"
    def description = "answers"
    def parameters_schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }
    def execute(n:) = n * 2
  end

  # A look-alike with RubyLLM 1.16's reserved keyword: the guest cannot fill it in.
  class AuditedLookAlike < LookAlike
    def name = "audited_look_alike"
    def parameters_schema = { type: "object", properties: { n: { type: "integer" }, tool_call: {} } }
    def execute(n:, tool_call: nil) = [n, tool_call]
  end

  def setup
    @defined = []
  end

  def teardown
    @defined.each(&:close)
  end

  def define(parent = CodeCell::Tool, name: :Research, &body)
    klass = Class.new(parent)
    self.class.send(:remove_const, name) if self.class.const_defined?(name, false)
    self.class.const_set(name, klass)
    klass.class_eval(&body) if body
    @defined << klass
    klass
  end

  def run_code(tool, code)
    result = tool.new.call(code)
    assert_equal "ok", result[:status], result.inspect
    result[:value]
  end

  def guest_error(klass, call)
    run_code(klass, "begin; #{call}; rescue SB::ToolError => e; [e.class.name, e.message]; end")
  end

  def test_tools_from_classes_instances_and_names
    search = SearchTool.new
    klass = define { tools MyApp::Tools::Weather, search, "forecast" => MyApp::Tools::Weather }
    assert_equal %w[weather search forecast], klass.tools.map(&:name)
    value = run_code(klass, '[SB.call("weather", city: "Oslo"), SB.call("search", query: "q"), SB.call("forecast", city: "Rome", days: 3)]')
    assert_equal({ "city" => "Oslo", "days" => 1, "calls" => 1 }, value[0])
    assert_equal %w[q String], value[1] # symbol keys reached execute: the value is a String
    assert_equal({ "city" => "Rome", "days" => 3, "calls" => 1 }, value[2]) # its own instance
    # Made once at definition: the next run calls the same instance.
    assert_equal 2, run_code(klass, 'SB.call("weather", city: "Oslo")["calls"]')
  end

  def test_symbol_keys_tool_call_and_halt
    klass = define { tools [Keys, Audited], stop: Stopper }
    assert_equal %w[keys audited stop], klass.tools.map(&:name)
    assert_equal [[":opts"], ['"a"']], run_code(klass, 'SB.call("keys", opts: { a: 1 })')
    assert_equal %w[q nil], run_code(klass, 'SB.call("audited", query: "q")')
    assert_equal({ "error" => "Invalid tool arguments: unknown keyword: tool_call" },
                 run_code(klass, 'SB.call("audited", query: "q", tool_call: 1)'))
    assert_equal "stop here", run_code(klass, 'SB.call("stop")')
    look = define(name: :Look) { tools AuditedLookAlike }
    assert_equal [1, nil], run_code(look, 'SB.call("audited_look_alike", n: 1)')
    assert_equal({ "error" => "Invalid tool arguments: unknown keyword: tool_call" },
                 run_code(look, 'SB.call("audited_look_alike", n: 1, tool_call: "forged")'))
  end

  # A RubyLLM tool given to a plain cell is bound as a Tool binds it, not called as a block
  # (RubyLLM's call(args, tool_call:) would take the arguments as keywords and raise).
  def test_a_plain_cell_binds_rubyllm_tools
    cell = CodeCell::Cell.new(tools: { "weather" => MyApp::Tools::Weather, "look" => LookAlike.new })
    result = cell.run('[SB.call("weather", city: "Oslo")["city"], SB.call("look", n: 4)]')
    assert_equal :ok, result.status, result.to_h.inspect
    assert_equal ["Oslo", 8], result.value
  ensure
    cell&.close
  end

  def test_tool_spellings
    klass = define do
      tool MyApp::Tools::Weather
      tool "fc" => MyApp::Tools::Weather
      tool lookalike: LookAlike.new
      tool("echo") { |text:| text }
    end
    assert_equal %w[weather fc lookalike echo], klass.host_tools.map(&:name)
    assert_equal [6, "e"], run_code(klass, '[SB.call("lookalike", n: 3), SB.call("echo", text: "e")]')
    assert_raises(ArgumentError) { klass.tool MyApp::Tools::Weather, SearchTool } # tool takes one
    e = assert_raises(ArgumentError) { klass.tool "lonely" }
    assert_match(/give a block, or a tool/, e.message)
    e = assert_raises(ArgumentError) { klass.tool SearchTool, description: "x" }
    assert_match(/go with a block/, e.message)
  end

  def test_names_follow_rubyllm_from_the_leaf_or_the_tools_own
    klass = define { tools MyApp::Tools::Weather, SearchTool, Renamed, Legacy, LookAlike, HTTPProxyTool }
    assert_equal %w[weather search web_lookup legacy look_alike http_proxy], klass.tools.map(&:name)
    e = assert_raises(ArgumentError) { define(name: :Anon) { tools Class.new(StandIn::Tool) { def execute = 1 } } }
    assert_match(/has no name/, e.message)
  end

  def test_schemas_from_every_generation_and_the_typed_signature
    klass = define { tools MyApp::Tools::Weather, Legacy, LookAlike }
    schemas = klass.tools.to_h { |t| [t.name, t.input_schema] }
    assert_equal %w[city], schemas["weather"]["required"]
    assert_equal "integer", schemas["weather"]["properties"]["days"]["type"]
    assert_equal({ "type" => "object", "properties" => { "city" => { "type" => "string", "description" => "the city" } },
                   "required" => ["city"] }, schemas["legacy"])
    assert_equal ["n"], schemas["look_alike"]["required"]
    text = klass.description
    assert_includes text, "### weather\n\nThe weather in a city"
    assert_match(/SB\.call\("weather", city: String, days: Integer\?\)/, text)
    assert_includes text, "- `city` (String, required) — the city"
    assert_equal "old Rome", run_code(klass, 'SB.call("legacy", city: "Rome")')
  end

  def test_bad_arguments_are_rubyllms_error_hash
    klass = define { tools Convert, Legacy }
    assert_equal({ "error" => "Invalid tool arguments: missing keyword: units" },
                 run_code(klass, 'SB.call("convert", city: "Oslo")'))
    assert_equal "Oslo C", run_code(klass, 'SB.call("convert", city: "Oslo", units: "C")')
    # RubyLLM 1.3's call checks nothing: the same rule runs here.
    assert_equal({ "error" => "Invalid tool arguments: unknown keyword: town" },
                 run_code(klass, 'SB.call("legacy", city: "x", town: "y")'))
    # What the schema says is checked by the engine first.
    name, message = guest_error(define(name: :Strict) { tools MyApp::Tools::Weather }, 'SB.call("weather", days: 2)')
    assert_equal "SB::ToolError", name
    assert_match(/the required "city" is missing/, message)
  end

  def test_a_raise_is_a_tool_error_with_class_and_message
    assert_equal ["SB::ToolError", "KeyError: no such key"], guest_error(define { tools Boom }, 'SB.call("boom")')
  end

  def test_answers_json_cannot_hold_come_back_as_inspect
    value = run_code(define { tools Odd }, 'SB.call("odd")')
    assert_match(/\A#<Object:0x\h+>\z/, value["object"])
    assert_equal "#<struct a=1>", value["struct"] # to_s would be the same; inspect is the rule
    assert_equal({ "$float" => "NaN" }, value["nan"])
    assert_equal "s", value["sym"]
    assert_equal [{ "cents" => 250, "currency" => "EUR" }, "#<Broken>"], run_code(define(name: :Prices) { tools Priced }, 'SB.call("priced")')
  end

  def test_bad_declarations_raise_and_change_nothing
    klass = define { tools SearchTool }
    cases = {
      "a duplicate name" => [proc { klass.tools MyApp::Tools::Weather, SearchTool }, /"search" is bound already/],
      "a duplicate within one call" => [proc { klass.tools MyApp::Tools::Weather, "weather" => Legacy }, /"weather" is bound already/],
      "a non-tool" => [proc { klass.tools MyApp::Tools::Weather, Object.new }, /is not a tool/],
      "a class that is not a tool" => [proc { klass.tools MyApp::Tools::Weather, String }, /is not a tool/],
      "a CodeCell::Tool" => [proc { klass.tools MyApp::Tools::Weather, define(name: :Inner) }, /is a CodeCell::Tool/],
      "a CodeCell::Tool instance" => [proc { klass.tools define(name: :Inner2).new }, /is a CodeCell::Tool/],
      "a name the engine refuses" => [proc { klass.tools "1st" => Legacy }, /must start with a letter/],
      "a block with a name the engine refuses" => [proc { klass.tool("bad name") { 1 } }, /may hold only/],
      "a block tool's duplicate" => [proc { klass.tool("search") { 1 } }, /"search" is bound already/],
      "nothing" => [proc { klass.tools({}) }, /give RubyLLM tools/],
      "a class whose new raises" => [proc { klass.tools Legacy, Unmakeable }, /Unmakeable.new raised IOError: no token/]
    }
    cases.each do |what, (body, message)|
      e = assert_raises(ArgumentError, what) { body.call }
      assert_match(message, e.message, what)
      assert_equal %w[search], klass.tools.map(&:name), what
    end
  end

  def test_at_most_64_host_tools
    classes = 64.times.map { |i| Class.new(LookAlike) { define_method(:name) { "t#{i}" } } }
    klass = define { tools(*classes.first(63)) }
    e = assert_raises(ArgumentError) { klass.tools classes[63], Legacy }
    assert_match(/too many host tools \(65\); at most 64/, e.message)
    assert_equal 63, klass.tools.size
    klass.tools classes[63]
    assert_equal 64, klass.tools.size
    assert_raises(ArgumentError) { klass.tool("one_more") { 1 } }
  end

  def test_subclasses_inherit_without_sharing_the_table
    parent = define { tools SearchTool }
    child = define(parent, name: :Child) { tools Legacy }
    assert_equal %w[search legacy], child.tools.map(&:name)
    assert_equal %w[search], parent.tools.map(&:name)
    parent.tools MyApp::Tools::Weather
    refute_includes child.tools.map(&:name), "weather"
    assert_equal "old x", run_code(child, 'SB.call("legacy", city: "x")')
  end

  def test_add_tools_per_instance
    klass = define { tools SearchTool }
    plain = klass.new
    extended = klass.new
    extended.add_tools Legacy, "two" => LookAlike.new
    assert_equal %w[search legacy two], extended.host_tools.map(&:name)
    assert_same klass.cell, plain.cell
    refute_same klass.cell, extended.cell
    assert_includes extended.description, "### legacy"
    refute_includes klass.description, "### legacy"
    assert_equal "old a", extended.call('SB.call("legacy", city: "a")')[:value]
    assert_equal "SB::UnknownTool", plain.call('begin; SB.call("legacy", city: "a"); rescue SB::ToolError => e; e.class.name; end')[:value]
    e = assert_raises(ArgumentError) { extended.add_tools SearchTool } # the class's name is taken
    assert_match(/bound already/, e.message)
    own = extended.cell
    extended.add_tools LookAlike # a new tool: the next run has a new cell
    assert own.closed?
    assert_equal 8, extended.call('SB.call("look_alike", n: 4)')[:value]
    own = extended.cell
    extended.close
    assert own.closed?
    refute klass.cell.closed?
  end

  def test_an_instances_own_cell_is_closed_when_it_is_collected
    klass = define { cell_options(pool: 1) }
    before = descendants
    # On a thread of its own, whose stack is gone after join (test_cell.rb says why).
    Thread.new do
      instance = klass.new
      instance.add_tools Legacy
      instance.cell.warmup
      assert_equal "old a", instance.call('SB.call("legacy", city: "a")')[:value]
      assert_operator descendants, :>, before
      nil
    end.join
    wait_until { descendants <= before }
  end

  def weather_server(name = "weather", tools: nil, **options)
    tools ||= [
      StandIn::McpTool.new("forecast", "The forecast", { "type" => "object", "properties" => { "city" => { "type" => "string" } },
                                                         "required" => ["city"] }) do |params|
        params[:city] == "nowhere" ? { fail: "Tool execution error: unknown city" } : { text: "sunny in #{params[:city]}" }
      end,
      StandIn::McpTool.new("stats", "Numbers", { "type" => "object", "properties" => {} },
                           output_schema: { "type" => "object" }) { { structured: { "n" => 2**70 } } }
    ]
    StandIn::Client.new(name: name, tools: tools, **options)
  end

  def test_mcps_binds_every_tool_of_a_client
    client = weather_server(instructions: "Cities by English name.")
    klass = define { mcps client }
    assert_equal %w[forecast stats], klass.tools.map(&:name)
    assert_equal [client], klass.mcps.map(&:client)
    value = run_code(klass, '[SB.call("forecast", city: "Oslo"), SB.call("forecast", city: "nowhere"), SB.call("stats")]')
    assert_equal({ "text" => "sunny in Oslo", "structured" => nil, "error" => false }, value[0])
    assert_equal({ "text" => "Tool execution error: unknown city", "structured" => nil, "error" => true }, value[1])
    assert_equal 2**70, value[2]["structured"]["n"]
    text = klass.description
    assert_match(/SB\.call\("forecast", city: String\)/, text)
    assert text.end_with?("\n\n## Server notes\n- **weather** — Cities by English name."), text[-200..]
    assert_operator text.index("## Tools"), :<, text.index("## Server notes")
  end

  # A server class made with the declared keywords (the seed's `mcps Linear, user: current_user`).
  class UserServer < StandIn::Client
    def initialize(user:)
      super(name: "linear", tools: [StandIn::McpTool.new("whoami", "", nil) { { text: user } }])
    end
  end

  # Result objects read as they are: MCP's CallToolResult spelled in Ruby (content,
  # structured_content, error?) and the seed's RubyLLM::MCP::Result (text, structured, error?:
  # juneira/ruby_llm-code_mode lib/ruby_llm/code_mode.rb, normalize_result).
  CallResult = Struct.new(:content, :structured_content, :failed) do
    def error? = failed
  end
  SeedResult = Struct.new(:text, :structured, :failed) do
    def error? = failed
  end

  class ResultTool < StandIn::McpTool
    def call(args, tool_call: nil)
      _ = tool_call
      return SeedResult.new("seed", { "k" => 1 }, false) if args["seed"]

      CallResult.new([{ "type" => "text", "text" => "a" }, { "type" => "text", "text" => "b" }], { "n" => 1 }, true)
    end
  end

  def test_result_objects
    tool = ResultTool.new("result", "", { "type" => "object", "properties" => { "seed" => { "type" => "boolean" } } })
    klass = define { mcps StandIn::Client.new(name: "r", tools: [tool]) }
    assert_equal [{ "text" => "a\nb", "structured" => { "n" => 1 }, "error" => true },
                  { "text" => "seed", "structured" => { "k" => 1 }, "error" => false }],
                 run_code(klass, '[SB.call("result"), SB.call("result", seed: true)]')
  end

  def test_an_old_mcp_tool_keeps_its_servers_schema
    schema = { "type" => "object", "properties" => { "ids" => { "type" => "array", "items" => { "type" => "integer" } } },
               "required" => ["ids"] }
    server = StandIn::Client.new(name: "old", tools: [StandIn::OldMcpTool.new("pick", schema)])
    klass = define { mcps server }
    assert_equal schema, klass.tools.first.input_schema
    assert_equal '{"ids":[1,2]}', run_code(klass, 'SB.call("pick", ids: [1, 2])["text"]')
  end

  def test_an_mcp_tool_bound_alone_answers_like_its_server
    tool = weather_server.tools.first
    klass = define { tools tool }
    assert_equal %w[forecast], klass.tools.map(&:name) # its own name
    assert_equal({ "text" => "sunny in x", "structured" => nil, "error" => false },
                 run_code(klass, 'SB.call("forecast", city: "x")'))
  end

  def test_subclasses_inherit_servers_without_sharing_them
    first = weather_server(instructions: "First.")
    parent = define { mcps first }
    second = weather_server("other", tools: [], instructions: "Second.")
    child = define(parent, name: :ChildServers) { mcps second }
    assert_equal %w[weather other], child.mcps.map(&:name)
    assert_equal %w[weather], parent.mcps.map(&:name)
    assert_includes child.description, "- **weather** — First.\n- **other** — Second."
  end

  def test_mcps_with_a_server_class_and_its_keywords
    klass = define { mcp UserServer, user: "ada" } # the seed's older spelling
    assert_equal({ "text" => "ada", "structured" => nil, "error" => false }, run_code(klass, 'SB.call("whoami")'))
    server = weather_server
    e = assert_raises(ArgumentError) { define(name: :Mixed) { mcps server, UserServer, user: "x" } }
    assert_match(/keywords \(user\) are for server classes/, e.message)
    e = assert_raises(ArgumentError) { define(name: :NoUser) { mcps UserServer } }
    assert_match(/UserServer.new raised ArgumentError/, e.message)
  end

  def test_a_taken_name_becomes_server_tool_or_raises
    server = weather_server
    klass = define do
      tool("forecast") { 1 }
      mcps server
    end
    assert_equal %w[forecast weather_forecast stats], klass.tools.map(&:name)
    again = weather_server
    e = assert_raises(ArgumentError) { klass.mcps again }
    assert_match(/"weather_forecast" is bound already/, e.message)
    assert_equal %w[forecast weather_forecast stats], klass.tools.map(&:name)
    assert_equal 1, klass.mcps.size
  end

  def test_a_server_that_cannot_be_listed_rolls_the_call_back
    klass = define { tools SearchTool }
    made = []
    server_class = Class.new(StandIn::Client) do
      define_method(:initialize) { |**| super(name: "made", tools: []).tap { made << self } }
    end
    broken = weather_server("down", fail_listing: true)
    e = assert_raises(ArgumentError) { klass.mcps server_class, broken }
    assert_match(/server "down" could not list its tools: IOError: connection refused/, e.message)
    assert_equal %w[search], klass.tools.map(&:name)
    assert_empty klass.mcps
    assert made.first.stopped, "a server made for the call was left running"
    e = assert_raises(ArgumentError) { klass.mcps Object.new }
    assert_match(/is not an MCP client/, e.message)
    e = assert_raises(ArgumentError) { klass.mcps [] }
    assert_match(/give MCP clients/, e.message)
  end

  def test_add_mcps_per_instance
    klass = define { tools SearchTool }
    instance = klass.new
    instance.add_mcps weather_server(instructions: "Be kind.")
    assert_equal %w[search forecast stats], instance.host_tools.map(&:name)
    assert_includes instance.description, "## Server notes\n- **weather** — Be kind."
    refute_includes klass.description, "## Server notes"
    assert_equal "sunny in x", instance.call('SB.call("forecast", city: "x")["text"]')[:value]
    instance.close
  end

  # The seed's rule for any host tool's answer, blocks of a cell included.
  def test_a_blocks_answer_json_cannot_hold_is_its_inspect
    CodeCell::Cell.open(language: :ruby, pool: 0) do |cell|
      time = Time.at(1_767_322_245, 500, :millisecond).utc # inspect shows the .5 s that to_s drops
      cell.tool("odd") { [Object.new, time, Float::INFINITY, "\xff".b, { 1 => "a", "1" => "b" }] }
      cell.tool("deep") { a = []; a << a; a }
      value = cell.run('SB.call("odd")').value
      assert_match(/\A#<Object:0x\h+>\z/, value[0])
      assert_equal "2026-01-02 02:50:45.5 UTC", value[1]
      assert_equal Float::INFINITY, value[2] # sent tagged, read back as the Float
      assert_equal "\uFFFD", value[3]
      assert_equal '{1=>"a", "1"=>"b"}', value[4]
      message = cell.run('begin; SB.call("deep"); rescue SB::ToolError => e; e.message; end').value
      assert_match(/nested deeper than 200 levels/, message)
    end
  end
end
