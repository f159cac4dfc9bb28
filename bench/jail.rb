# frozen_string_literal: true

# CodeCell.jail { 1 + 1 } round trip beside the seed's own mechanism, AgentJail.run's steps
# (bench/seed_jail.rb), in the same run, interleaved so that the machine's noise hits every
# column alike. Run by bench/jail.sh, which installs the gem first.
# Usage: ruby jail.rb [RUNS] [ROUNDS]: ROUNDS rounds of RUNS runs each; every round prints its
# medians and its ratio to the seed, and the last line the median of the rounds' ratios.
require "codecell"
require_relative "seed_jail"

runs = Integer(ARGV[0] || 200)
rounds = Integer(ARGV[1] || 3)

# The floor under both: a fork, a pipe, Marshal and a wait, nothing else.
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

SEED = "AgentJail.run { 1 + 1 }"
OURS = "CodeCell.jail { 1 + 1 }"
columns = { "bare fork + pipe + wait" => -> { bare_fork }, SEED => -> { SeedJail.run { 1 + 1 } },
            OURS => -> { CodeCell.jail { 1 + 1 } } }
columns.each_value { |f| 5.times { raise "wrong value" unless f.call == 2 } } # warm up
# An older gem (BENCH_GEMS) may not have jail_layers.
layers = CodeCell.respond_to?(:jail_layers) ? CodeCell.jail_layers : ["(this gem does not list them)"]
puts "CodeCell.jail round trip, #{rounds} rounds of #{runs} runs each, interleaved " \
     "(ruby #{RUBY_VERSION}, uid #{Process.euid})"
puts "walls: #{layers.join(",")}"
puts "seed: #{SeedJail::WHAT}"
ratios = []
rounds.times do |round|
  samples = Hash.new { |h, k| h[k] = [] }
  runs.times do
    columns.each do |name, f|
      t = clock
      raise "wrong value" unless f.call == 2

      samples[name] << (clock - t) * 1000
    end
  end
  puts format("round %d  %-24s %10s %10s", round + 1, "", "median ms", "p90 ms")
  samples.each do |name, list|
    puts format("         %-24s %10.3f %10.3f", name, median(list), list.sort[(list.size * 0.9).floor])
  end
  ratios << median(samples[OURS]) / median(samples[SEED])
  puts format("         ratio: %.2fx the seed's mechanism", ratios.last)
end
puts format("median ratio over %d rounds: %.2fx the seed's mechanism (aim: at most 1.0x)", rounds, median(ratios))
