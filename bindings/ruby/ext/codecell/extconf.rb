# Builds CodeCell::Native with the engine compiled in: its sources are in engine/ (the gemspec
# copies them there from the repository with bindings/vendor.cmake), so the installed gem
# depends on nothing but libseccomp and jansson, which the system provides.
require "mkmf"

engine = File.join(__dir__, "engine")
abort "codecell: #{engine} is missing; build the gem with `gem build codecell.gemspec`" unless File.directory?(engine)

pkg_config("libseccomp") or abort "codecell: libseccomp not found (Debian: libseccomp-dev)"
pkg_config("jansson") or abort "codecell: jansson not found (Debian: libjansson-dev)"
# libcurl's header only: the engine loads libcurl.so.4 at run time, for MCP servers over HTTP.
# Not linked: its two dozen libraries would be mapped into every process that requires
# codecell, and each fork (every CodeCell.jail forks twice) copies their mappings.
curl_cflags = pkg_config("libcurl", "cflags") or abort "codecell: libcurl's header not found (Debian: libcurl4-openssl-dev)"
$CFLAGS << " " << curl_cflags
have_library("pthread") or abort "codecell: pthread not found"

$INCFLAGS << " -I$(srcdir)/engine"
$VPATH << "$(srcdir)/engine"
$srcs = %w[codecell_ext.c jail_object.c result_object.c run_given.c tool_calls.c] + Dir.glob(File.join(engine, "*.c")).map { |f| File.basename(f) }.sort
# The engine is C11 with GNU interfaces (clone, pivot_root); its own symbols stay hidden.
$CFLAGS << " -std=gnu11 -D_GNU_SOURCE -fvisibility=hidden -O2"

create_makefile("codecell/codecell_ext")
