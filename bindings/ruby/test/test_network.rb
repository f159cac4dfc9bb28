# frozen_string_literal: true

require_relative "helper"
require "socket"

# A cell's network policy from the gem (network:): HTTP to an allowed host through the engine's
# proxy, a refused host answered 403 with the reason, the connections in the result, and a bad
# policy refused naming its place. The server is a real one on this machine's loopback (a
# TCPServer answering each request), reached through the policy's resolve entry.
class TestNetwork < Minitest::Test
  GET = {
    ruby: "require 'net/http'\nNet::HTTP.get(URI('http://shop.example.test/items'))",
    python: "import urllib.request\n" \
            "urllib.request.urlopen('http://shop.example.test/items', timeout=10).read().decode()"
  }.freeze
  REFUSED = {
    ruby: "require 'net/http'\nr = Net::HTTP.get_response(URI('http://other.example.test/'))\n" \
          "[r.code.to_i, r.body]",
    python: "import urllib.request, urllib.error\n" \
            "try:\n    urllib.request.urlopen('http://other.example.test/', timeout=10)\n" \
            "except urllib.error.HTTPError as e:\n    r = [e.code, e.read().decode()]\nr"
  }.freeze

  def setup
    @server = TCPServer.new("127.0.0.1", 0)
    @thread = Thread.new do
      loop do
        client = @server.accept
        path = client.gets.to_s.split[1]
        while (line = client.gets) && line != "\r\n"; end
        body = "got #{path}"
        client.write("HTTP/1.1 200 OK\r\nContent-Length: #{body.bytesize}\r\nConnection: close\r\n\r\n#{body}")
        client.close
      end
    rescue IOError, SystemCallError
      nil
    end
    @policy = { allow: ["shop.example.test"],
                resolve: { "shop.example.test" => "127.0.0.1:#{@server.addr[1]}" } }
    @cells = []
  end

  def teardown
    @cells.each(&:close)
    @server.close
    @thread.join
  end

  def cell(lang, **options)
    CodeCell::Cell.new(language: lang, **options).tap { |c| @cells << c }
  end

  def test_an_allowed_host_answers_and_the_result_names_the_connection
    GET.each do |lang, code|
      r = cell(lang, network: @policy).run(code)
      assert_equal "got /items", r.value, r.to_h.inspect
      assert_equal [["shop.example.test", 80]], r.network.map { |c| [c["host"], c["port"]] }
      refute r.network.first.key?("refused")
    end
  end

  def test_a_refused_host_gets_403_with_the_reason
    REFUSED.each do |lang, code|
      r = cell(lang, network: @policy).run(code)
      assert_equal 403, r.value[0], r.to_h.inspect
      assert_includes r.value[1], "other.example.test:80 is not allowed"
      assert_includes r.network.first["refused"], "not allowed"
      assert r.to_h.key?(:network_refused)
    end
  end

  def test_a_bad_policy_is_refused_naming_its_place
    error = assert_raises(ArgumentError) { cell(:ruby, network: { allow: ["https://x.example.test/p"] }) }
    assert_match(/network\.allow\[0\]/, error.message)
    assert_raises(ArgumentError) { cell(:ruby, network: ["x.example.test"]) }
  end

  def test_a_cell_without_a_policy_has_no_network
    r = cell(:ruby).run("ENV['HTTPS_PROXY']")
    assert_nil r.value
    assert_empty r.network
  end
end
