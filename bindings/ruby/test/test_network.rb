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

  # terminate_tls through the gem: the engine (in this process) verifies the server against
  # SSL_CERT_FILE, here a test CA; the guest trusts the cell's CA by itself.
  def test_terminate_tls_adds_the_secret_over_https
    require "openssl"
    require "tmpdir"
    dir = Dir.mktmpdir
    ca_key, ca, key, leaf = %w[ca.key ca.pem leaf.key leaf.pem].map { |n| File.join(dir, n) }
    ec = %w[-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2]
    system("openssl", "req", "-x509", *ec, "-keyout", ca_key, "-out", ca,
           "-subj", "/CN=gem test CA", exception: true, err: File::NULL)
    system("openssl", "req", "-x509", *ec, "-keyout", key, "-out", leaf,
           "-subj", "/CN=secure.example.test", "-addext", "subjectAltName=DNS:secure.example.test",
           "-CA", ca, "-CAkey", ca_key, exception: true, err: File::NULL)
    context = OpenSSL::SSL::SSLContext.new
    context.cert = OpenSSL::X509::Certificate.new(File.read(leaf))
    context.key = OpenSSL::PKey.read(File.read(key))
    tcp = TCPServer.new("127.0.0.1", 0)
    tls = OpenSSL::SSL::SSLServer.new(tcp, context)
    seen = Queue.new
    server = Thread.new do
      loop do
        client = tls.accept
        path = client.gets.to_s.split[1]
        while (line = client.gets) && line != "\r\n"
          seen << line.split(": ", 2)[1].strip if line.downcase.start_with?("authorization:")
        end
        body = "got #{path}"
        client.write("HTTP/1.1 200 OK\r\nContent-Length: #{body.bytesize}\r\nConnection: close\r\n\r\n#{body}")
        client.close
      rescue OpenSSL::SSL::SSLError, SystemCallError
        next
      end
    rescue IOError
      nil
    end
    saved = ENV.to_h.slice("SSL_CERT_FILE", "CODECELL_GEM_SECRET")
    ENV["SSL_CERT_FILE"] = ca
    ENV["CODECELL_GEM_SECRET"] = "g-secret"
    policy = { allow: ["secure.example.test"],
               resolve: { "secure.example.test" => "127.0.0.1:#{tcp.addr[1]}" },
               headers: { "secure.example.test" => { "Authorization" => "Bearer ${CODECELL_GEM_SECRET}" } },
               terminate_tls: true }
    { ruby: "require 'net/http'\nNet::HTTP.get(URI('https://secure.example.test/s'))",
      python: "import urllib.request\n" \
              "urllib.request.urlopen('https://secure.example.test/s', timeout=10).read().decode()" }.each do |lang, code|
      r = cell(lang, network: policy).run(code)
      assert_equal "got /s", r.value, r.to_h.inspect
      assert_equal "Bearer g-secret", (seen.pop(true) rescue nil) # pushed before the answer
      refute_includes r.to_h.inspect, "g-secret"
    end
  ensure
    %w[SSL_CERT_FILE CODECELL_GEM_SECRET].each { |k| saved&.key?(k) ? ENV[k] = saved[k] : ENV.delete(k) }
    tls&.close
    server&.join
    FileUtils.rm_rf(dir) if dir
  end
end
