# frozen_string_literal: true

# Shared by the gem's tests, which run against the installed gem (tests/bindings/install.sh).
require "minitest/autorun"
require "tmpdir"
require "fileutils"
require "codecell"

module Helper
  # Waits for the block to be true, polling; generous, for a loaded machine.
  def wait_until(seconds = 60)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    until yield
      flunk "condition not met within #{seconds} s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      GC.start
      sleep 0.05
    end
  end

  # Processes below this one (or below pid): the sandboxes (and their helpers) of every cell.
  # The processes below `of` that belong to sandboxes: not counting a forked cell's zygote,
  # which lives as long as its cell, and the init of its own sandbox.
  def descendants(of = Process.pid)
    parents = {}
    zygotes = []
    Dir.glob("/proc/[0-9]*/stat").each do |f|
      stat = File.read(f) rescue next
      pid = File.basename(File.dirname(f)).to_i
      fields = stat[(stat.rindex(")") + 2)..].split
      parents[pid] = fields[1].to_i
      zygotes << pid if stat[/\((.*)\)/, 1] == "codecell-zygote"
    end
    holders = zygotes + zygotes.map { |z| parents[z] }
    parents.keys.count do |pid|
      next false if holders.include?(pid)

      p = parents[pid]
      p = parents[p] while p && p > 1 && p != of
      p == of
    end
  end

  def os_threads
    Dir.children("/proc/self/task").size
  end
end
