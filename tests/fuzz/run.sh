#!/bin/sh
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for FUZZ_SECONDS
# (default 60) from its committed seed corpus. Exits non-zero on the first crash.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
seconds="${FUZZ_SECONDS:-60}"
out="${FUZZ_BUILD:-$root/build-fuzz}"
command -v clang >/dev/null || { echo "fuzz: clang is not installed (scripts/bootstrap --fuzz)" >&2; exit 2; }
mkdir -p "$out"
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE -std=gnu11"
# Every wing of the engine (src/lib/README.md): the fuzz targets reach into them as tests do.
inc="$(pkg-config --cflags libcurl) -I$root/include"
for wing in "$root"/src/lib/*/; do inc="$inc -I$wing"; done
inc="$inc -I$root/src/cli -I$root/src/mcp"
lib_sources="$(ls "$root"/src/lib/*/*.c)"
# The guest files the library embeds, generated as the CMake build does
# (cmake/guest_languages.cmake); the compiled preludes are left empty (no fuzz target starts an
# interpreter, and empty means "compile the source").
rm -rf "$out/guest" && cmake -DOUT="$out/guest" -P "$root/cmake/guest_languages.cmake"
embed() {
        cmake -DIN="$1" -DOUT="$out/$2.c" -DNAME="codecell_$2" -P "$root/cmake/embed.cmake"
}
: >"$out/empty"
# No fuzz target forks a sandbox: an empty fork server means "not built" (cells exec).
embed "$out/empty" zygote_so
embed "$out/empty" init_bin
embedded="$(ls "$out"/guest/*.c) $out/zygote_so.c $out/init_bin.c"
for target in frame mount_rules tools_file units config_file mcp_message mcp_header http_framing \
        egress_request egress_hello \
        upstream_result repl_entry journal_codec; do
        extra=""
        [ "$target" = units ] && extra="$root/src/cli/units.c"
        [ "$target" = repl_entry ] && extra="$root/src/cli/repl_entry.c"
        [ "$target" = mcp_message ] && extra="$(ls "$root"/src/mcp/*.c) -lmicrohttpd"
        [ "$target" = mcp_header ] && extra="$root/src/mcp/headers.c"
        [ "$target" = http_framing ] && extra="$root/src/mcp/framing.c"
        # shellcheck disable=SC2086
        clang $flags $inc -o "$out/fuzz_$target" "$here/fuzz_$target.c" $extra $lib_sources \
                $embedded -lseccomp -ljansson -lpthread -lm
        work="$out/corpus_$target"
        rm -rf "$work" && cp -r "$here/corpus/$target" "$work"
        echo "== fuzz_$target for ${seconds}s"
        if ! "$out/fuzz_$target" -max_total_time="$seconds" -max_len=65536 \
                -artifact_prefix="$out/crash_${target}_" "$work" >"$out/fuzz_$target.log" 2>&1; then
                tail -40 "$out/fuzz_$target.log" >&2
                echo "fuzz_$target found a crash: $out/crash_${target}_*" >&2
                exit 1
        fi
        grep -E "^#[0-9]+ *DONE" "$out/fuzz_$target.log" || tail -2 "$out/fuzz_$target.log"
done
