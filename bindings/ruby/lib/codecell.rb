# frozen_string_literal: true

# codecell for Ruby: run model-written Ruby and Python in fresh Linux sandboxes, with host
# tools written as Ruby blocks. See the gem's README.md.
require "json"
require "codecell/version"
require "codecell/codecell_ext"
require "codecell/answer"
require "codecell/block_schema"
require "codecell/dispatcher"
require "codecell/result"
require "codecell/session"
require "codecell/sessions"
require "codecell/cell"
require "codecell/jail"

module CodeCell
  # Made at its first use, so that it is a RubyLLM::Tool when RubyLLM is loaded by then, as
  # when a Gemfile lists codecell before ruby_llm (require "codecell/ruby_llm" to be sure).
  autoload :Tool, "codecell/tool"
  autoload :HostTools, "codecell/host_tools" # Cell.new(tools:) binds RubyLLM tools with it
end
