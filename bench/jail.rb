# frozen_string_literal: true

# CodeCell.jail { 1 + 1 } round trip beside the seed's mechanism, a bare fork + pipe + wait
# (Marshal over the pipe), in the same run, interleaved so the machine's noise hits both
# columns alike. Run by bench/jail.sh, which installs the gem first. Usage: ruby jail.rb [RUNS]
require "codecell"

runs = Integer(ARGV[0] || 300)

def bare_fork
  r, w = IO.pipe
  pid = fork do
    r.close
    w.write(Marshal.dump(1 + 1))
    exit!(0)
  end
  w.close
  value = Marshal.load(r.read)
  r.close
  Process.wait(pid)
  value
end

def clock
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def median(list)
  s = list.sort
  s.size.odd? ? s[s.size / 2] : (s[s.size / 2 - 1] + s[s.size / 2]) / 2.0
end

columns = { "bare fork + pipe + wait" => -> { bare_fork }, "CodeCell.jail { 1 + 1 }" => -> { CodeCell.jail { 1 + 1 } } }
columns.each_value { |f| 5.times { f.call } } # warm up
samples = Hash.new { |h, k| h[k] = [] }
runs.times do
  columns.each do |name, f|
    t = clock
    raise "wrong value" unless f.call == 2

    samples[name] << (clock - t) * 1000
  end
end
native = CodeCell::Native::Jail.new(1000, 1000, 64 << 20, [], [], false, 2)
layers = native.layers
native.close
puts "CodeCell.jail round trip, #{runs} runs each, interleaved (ruby #{RUBY_VERSION}, uid #{Process.euid})"
puts "walls: #{layers.join(",")}"
puts format("%-26s %10s %10s", "", "median ms", "p90 ms")
samples.each do |name, list|
  puts format("%-26s %10.3f %10.3f", name, median(list), list.sort[(list.size * 0.9).floor])
end
ratio = median(samples["CodeCell.jail { 1 + 1 }"]) / median(samples["bare fork + pipe + wait"])
puts format("ratio: %.2fx the bare fork (aim: within 2x)", ratio)
