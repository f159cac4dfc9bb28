# The programs that compile a guest prelude with the interpreter the sandbox runs, shared by the
# build (CMakeLists.txt) and by the copy of the engine the bindings carry (bindings/vendor.cmake).
# Each is a list: the interpreter, then its arguments; the prelude's path and the output's follow.
# A hash-based .pyc never checked against the source, whose copy in each sandbox is new.
set(PRELUDE_PYC_COMMAND /usr/bin/python3 -I -S -c
  "__import__('py_compile').compile(__import__('sys').argv[1], cfile=__import__('sys').argv[2], dfile='/codecell/prelude.py', doraise=True, invalidation_mode=__import__('py_compile').PycInvalidationMode.UNCHECKED_HASH)")
set(PRELUDE_ISEQ_COMMAND /usr/bin/ruby --disable-gems -e
  "File.binwrite(ARGV[1], RubyVM::InstructionSequence.compile(File.read(ARGV[0]), '/codecell/prelude.rb', '/codecell/prelude.rb').to_binary)")
