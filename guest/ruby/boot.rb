# The Ruby guest's start (passed as `ruby --disable-gems -e`): runs the prelude from the
# instruction sequence the build compiled (/codecell/prelude.rb.iseq), or, when that is not
# this interpreter's (another Ruby version or platform) or is absent, from the source,
# /codecell/prelude.rb.
iseq = begin
  RubyVM::InstructionSequence.load_from_binary(File.binread("/codecell/prelude.rb.iseq"))
rescue StandardError
  nil
end
iseq ? iseq.eval : load("/codecell/prelude.rb")
