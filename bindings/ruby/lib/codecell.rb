# frozen_string_literal: true

# codecell for Ruby: run model-written Ruby and Python in fresh Linux sandboxes, with host
# tools written as Ruby blocks. See the gem's README.md.
require "json"
require "codecell/version"
require "codecell/codecell_ext"
require "codecell/dispatcher"
require "codecell/result"
require "codecell/session"
require "codecell/sessions"
require "codecell/cell"
require "codecell/tool"
require "codecell/jail"
