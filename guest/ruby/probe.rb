# The Ruby interpreter's probe, run on the host when a cell is made (src/lib/interpreter.c),
# as `ruby --disable-gems -e <this> FOLDER...` with the sandbox's flags: one JSON object on
# stdout that says which language and version this interpreter is, which folders of each
# library folder go on $LOAD_PATH, and what the guest can require besides the standard library.
require "json"
require "rbconfig"

# "nokogiri-1.15.4-x86_64-linux" => ["nokogiri", "1.15.4"]
def gem_name(dir)
  m = /\A(.+?)-(\d[^-]*)(?:-.+)?\z/.match(dir)
  m ? [m[1], m[2]] : [dir, nil]
end

# What a plain folder on the load path offers to `require`: its top-level .rb files.
def requirable(folder)
  Dir.children(folder).select { |n| n.end_with?(".rb") && !n.start_with?(".") }
     .map { |n| n.delete_suffix(".rb") }.sort
rescue SystemCallError
  []
end

problems = []
load_path = []
listed = []
ARGV.each_with_index do |folder, i|
  if File.directory?(File.join(folder, "gems")) && File.directory?(File.join(folder, "specifications"))
    # A gem home (GEM_HOME, `gem install --install-dir`): each gem's lib, and its compiled
    # extensions for this Ruby.
    Dir.children(File.join(folder, "gems")).sort.each do |dir|
      name, version = gem_name(dir)
      lib = File.join("gems", dir, "lib")
      load_path << [i, lib] if File.directory?(File.join(folder, lib))
      Dir.glob("extensions/*/#{RbConfig::CONFIG['ruby_version']}/#{dir}", base: folder).each do |ext|
        load_path << [i, ext]
      end
      listed << [version ? "#{name} #{version}" : name]
    end
  else
    load_path << [i, ""]
    listed << requirable(folder)
  end
end
# The system's own libraries beyond the standard library: site_ruby and vendor_ruby (Debian's
# ruby-* packages).
standard = [RbConfig::CONFIG["rubylibdir"], RbConfig::CONFIG["rubyarchdir"]]
$LOAD_PATH.each do |dir|
  listed << requirable(dir) unless standard.include?(dir)
end
puts JSON.generate(language: "ruby", version: RUBY_VERSION, load_path: load_path,
                   problems: problems, libraries: listed.flatten.uniq)
