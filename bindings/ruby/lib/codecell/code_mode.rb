# frozen_string_literal: true

# The seed ruby_llm-code_mode's spelling: after require "codecell/code_mode" (instead of
# "ruby_llm/code_mode"), `class Analytics < RubyLLM::CodeMode` works unchanged, in codecell's
# sandbox: the same DSL (mount, mount_rw, tool_name, description, warmup, mounts), the same
# result hashes. RubyLLM::CodeMode is a CodeCell::Tool. The seed gem itself defines the same
# constant: with it loaded, this file refuses to load.
require "codecell/ruby_llm"

module RubyLLM
  if const_defined?(:CodeMode, false) && !(CodeMode <= CodeCell::Tool)
    seed = CodeMode.const_defined?(:VERSION, false) ? "ruby_llm-code_mode #{CodeMode::VERSION}" : "another library"
    where = Object.const_source_location("RubyLLM::CodeMode")&.first
    raise LoadError, "codecell/code_mode: RubyLLM::CodeMode is already defined by #{seed}" \
                     "#{" (#{where})" if where}; load either it or codecell/code_mode, not both"
  end

  class CodeMode < CodeCell::Tool
    VERSION = CodeCell::VERSION

    class << self
      # The seed's name for the description it builds.
      def build_description
        description
      end
    end
  end
end
