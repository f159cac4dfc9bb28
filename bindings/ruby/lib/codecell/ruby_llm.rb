# frozen_string_literal: true

# RubyLLM's adapter: loads RubyLLM, then codecell, so that CodeCell::Tool and every class defined
# on it is a RubyLLM::Tool, whichever of codecell and ruby_llm was required first.
# `require "codecell"` alone never loads RubyLLM. CodeCell::Tool is made at its first use
# (codecell.rb autoloads it), on RubyLLM::Tool when RubyLLM is loaded then; a Ruby class cannot
# change its superclass, so a CodeCell::Tool already made without RubyLLM is refused here by
# name rather than left half a RubyLLM tool.
require "ruby_llm"
require "codecell"

module CodeCell
  if autoload?(:Tool).nil? && !(Tool < ::RubyLLM::Tool)
    made = ObjectSpace.each_object(Class).select { |k| k < Tool }.map { |k| k.name || k.inspect }.sort
    raise LoadError, "codecell/ruby_llm: CodeCell::Tool#{" (and #{made.join(", ")})" unless made.empty?} " \
                     "was made before RubyLLM was loaded and cannot become a RubyLLM::Tool; " \
                     "require \"codecell/ruby_llm\" before the first use of CodeCell::Tool"
  end
  Tool.name # made now, on RubyLLM::Tool
end
