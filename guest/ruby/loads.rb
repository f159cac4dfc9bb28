# Which libraries load, asked inside the sandbox: run as a cell's code (src/lib/run/library_check.c)
# with stdin a JSON array of entries, each the names one library is required by, and ARGV[0]
# the first entry to try. One line per entry on stdout as it is done, "codecell-loads I ok" or
# "codecell-loads I failed CLASS: MESSAGE", so that what was answered before a limit stopped
# the run is not lost; the entry under way then is the one that broke it.
require "json"

entries = JSON.parse($stdin.read)
(Integer(ARGV[0])...entries.size).each do |i|
  answer = begin
    entries[i].each { |name| require name }
    "ok"
  rescue ScriptError, StandardError, SystemExit => e
    "failed #{e.class}: #{e.message.split.join(" ")}"
  end
  $stdout.puts "codecell-loads #{i} #{answer[0, 300]}"
  $stdout.flush
end
