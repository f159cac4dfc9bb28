# How the build compiles guest/ruby/prelude.rb (cmake/guest_languages.cmake): into an
# instruction sequence, which RubyVM loads only into the version and platform that made it.
set(COMPILE_PRELUDE /usr/bin/ruby --disable-gems -e
  "File.binwrite(ARGV[1], RubyVM::InstructionSequence.compile(File.read(ARGV[0]), '/codecell/prelude.rb', '/codecell/prelude.rb').to_binary)")
