# frozen_string_literal: true

require_relative "lib/codecell/version"

# The engine is compiled into the gem's extension. In the repository, building the gem first
# copies the engine's sources into ext/codecell/engine (bindings/vendor.cmake); the gem carries
# that copy, so it installs and runs with no repository around.
root = File.expand_path("../..", __dir__)
engine = File.join(__dir__, "ext/codecell/engine")
if File.file?(File.join(root, "bindings/vendor.cmake")) && File.directory?(File.join(root, "src/lib"))
  system("cmake", "-DDEST=#{engine}", "-P", File.join(root, "bindings/vendor.cmake"), exception: true)
end

Gem::Specification.new do |spec|
  spec.name = "codecell"
  spec.version = CodeCell::VERSION
  spec.summary = "Run model-written Ruby and Python in fresh Linux sandboxes, with host tools in Ruby"
  spec.description = <<~DESC
    Bindings for libcodecell: CodeCell::Cell runs code in a fresh sandbox (namespaces, seccomp,
    Landlock, cgroups) and returns a structured result; sessions keep state; host tools are Ruby
    blocks the guest calls; CodeCell::Tool is the seed's mount DSL for agent frameworks.
  DESC
  spec.authors = ["codecell"]
  spec.license = "MIT"
  spec.required_ruby_version = ">= 3.0"
  spec.files = Dir.chdir(__dir__) do
    Dir["lib/**/*.rb", "ext/codecell/*.{c,h,rb}", "ext/codecell/engine/*.{c,h}", "README.md"]
  end
  spec.extensions = ["ext/codecell/extconf.rb"]
  spec.require_paths = ["lib"]
end
