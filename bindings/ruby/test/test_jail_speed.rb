# frozen_string_literal: true

require_relative "helper"
require "open3"
require "rbconfig"

# What keeps CodeCell.jail as cheap as the seed's bare fork (bench/jail.sh), checked by what it
# leaves behind, never by a timing.
class TestJailSpeed < Minitest::Test
  include Helper

  # Every fork copies the caller's mappings: the extension must not bring libcurl's two dozen
  # libraries into every process that requires codecell (the engine loads libcurl when an MCP
  # server over HTTP needs it).
  def test_requiring_codecell_maps_no_libcurl
    out, err, status = Open3.capture3(RbConfig.ruby, "-e",
                                      'require "codecell"; print File.read("/proc/self/maps")')
    assert status.success?, err
    assert_match(/codecell_ext/, out)
    curl = out.lines.grep(/libcurl/)
    assert_empty curl, "libcurl is mapped: #{curl.first}"
  end
end
