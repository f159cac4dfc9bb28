# The Ruby interpreter's probe, run on the host when a cell is made (src/lib/spec/interpreter.c),
# as `ruby --disable-gems -e <this> FOLDER...` with the sandbox's flags: one JSON object on
# stdout that says which language and version this interpreter is, which folders of each
# library folder go on $LOAD_PATH, and what the guest may require besides the standard library
# (each with the names to require: whether it loads is asked in the sandbox,
# src/lib/run/library_check.c).
require "json"
require "rbconfig"

# "nokogiri-1.15.4-x86_64-linux" => ["nokogiri", "1.15.4"]
def gem_name(dir)
  m = /\A(.+?)-(\d[^-]*)(?:-.+)?\z/.match(dir)
  m ? [m[1], m[2]] : [dir, nil]
end

def inside?(root, path)
  path == root || path.start_with?(root.chomp("/") + "/")
end

# The names in folder when it is a folder inside root, or nil. This probe runs on the host: a
# symbolic link planted in a library folder (a guest may write one through a read-write mount
# of the same folder) must not lead it to the host's folders, which the sandbox never shows.
# The path is checked before it is opened, and what was opened after (it cannot have been
# swapped in between).
def children_beneath(root, folder)
  return nil unless inside?(root, File.realpath(folder))
  Dir.open(folder) do |dir|
    inside?(root, File.readlink("/proc/self/fd/#{dir.fileno}")) ? dir.children.sort : nil
  end
rescue SystemCallError
  nil
end

# What a plain folder on the load path offers to `require`: its top-level .rb files.
def requirable(root, folder)
  (children_beneath(root, folder) || []).select { |n| n.end_with?(".rb") && !n.start_with?(".") }
                                        .map { |n| n.delete_suffix(".rb") }.sort
end

# The system's files that are never offered: the packaging tools, which install gems (the
# sandbox has no network and a read-only /usr, and runs with --disable-gems) (docs/languages.md).
SYSTEM_ONLY = %w[rubygems bundler].freeze

# What to require for a gem: its own name ("nokogiri", "net-telnet" as "net/telnet") when its
# lib holds that file, else the top-level files of its lib.
def gem_requires(root, lib, name)
  [name, name.tr("-", "/")].uniq.each do |own|
    return [own] if File.file?(File.join(lib, "#{own}.rb")) &&
                    inside?(root, File.realpath(File.join(lib, "#{own}.rb")))
  end
  requirable(root, lib)
rescue SystemCallError
  []
end

problems = []
load_path = []
listed = []
ARGV.each_with_index do |folder, i|
  gems = children_beneath(folder, File.join(folder, "gems"))
  if gems && children_beneath(folder, File.join(folder, "specifications"))
    # A gem home (GEM_HOME, `gem install --install-dir`): each gem's lib, and its compiled
    # extensions for this Ruby.
    platforms = children_beneath(folder, File.join(folder, "extensions")) || []
    gems.each do |dir|
      name, version = gem_name(dir)
      lib = File.join("gems", dir, "lib")
      load_path << [i, lib] if children_beneath(folder, File.join(folder, lib))
      platforms.each do |platform|
        ext = File.join("extensions", platform, RbConfig::CONFIG["ruby_version"], dir)
        load_path << [i, ext] if children_beneath(folder, File.join(folder, ext))
      end
      requires = gem_requires(folder, File.join(folder, lib), name)
      listed << { text: version ? "#{name} #{version}" : name, imports: requires } if requires.any?
    end
  else
    load_path << [i, ""]
    listed.concat(requirable(folder, folder).map { |n| { text: n, imports: [n] } })
  end
end
# The system's own libraries beyond the standard library: site_ruby and vendor_ruby (Debian's
# ruby-* packages).
standard = [RbConfig::CONFIG["rubylibdir"], RbConfig::CONFIG["rubyarchdir"]]
$LOAD_PATH.each do |dir|
  next if standard.include?(dir)
  listed.concat((requirable("/", dir) - SYSTEM_ONLY).map { |n| { text: n, imports: [n] } })
end
puts JSON.generate(language: "ruby", version: RUBY_VERSION, load_path: load_path,
                   problems: problems, libraries: listed.uniq { |lib| lib[:text] })
