#!/bin/sh
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for FUZZ_SECONDS
# (default 60) from its committed seed corpus, FUZZ_JOBS (default 2) at a time. Exits non-zero
# after the first batch with a crash.
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
# The engine's sources compiled once for every target (instrumented for coverage, not linked
# with libFuzzer's main), FUZZ_JOBS at a time: 13 targets used to compile them 13 times.
jobs="${FUZZ_JOBS:-2}"
objs="$out/objs"
rm -rf "$objs" && mkdir -p "$objs"
lib_flags="$(echo "$flags" | sed 's/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,/')"
export lib_flags inc objs
# shellcheck disable=SC2016 # expanded by the inner shell
printf '%s\n' $lib_sources $embedded | xargs -P "$jobs" -I{} sh -c \
        'o="$objs/$(basename "$1" .c).o"; exec clang $lib_flags $inc -c -o "$o" "$1"' sh {}
ar rcs "$out/libengine.a" "$objs"/*.o

targets="frame mount_rules tools_file units config_file mcp_message mcp_header http_framing
egress_request egress_hello upstream_result repl_entry journal_codec"
for target in $targets; do
        extra=""
        [ "$target" = units ] && extra="$root/src/cli/units.c"
        [ "$target" = repl_entry ] && extra="$root/src/cli/repl_entry.c"
        [ "$target" = mcp_message ] && extra="$(ls "$root"/src/mcp/*.c) -lmicrohttpd"
        [ "$target" = mcp_header ] && extra="$root/src/mcp/headers.c"
        [ "$target" = http_framing ] && extra="$root/src/mcp/framing.c"
        # shellcheck disable=SC2086
        clang $flags $inc -o "$out/fuzz_$target" "$here/fuzz_$target.c" $extra "$out/libengine.a" \
                -lseccomp -ljansson -lpthread -lm
done

# One target for its time; a crash leaves its log's tail and the failed mark.
fuzz_one() {
        target="$1"
        work="$out/corpus_$target"
        rm -rf "$work" && cp -r "$here/corpus/$target" "$work"
        rm -f "$out/fuzz_$target.failed"
        if ! "$out/fuzz_$target" -max_total_time="$seconds" -max_len=65536 \
                -artifact_prefix="$out/crash_${target}_" "$work" >"$out/fuzz_$target.log" 2>&1; then
                : >"$out/fuzz_$target.failed"
        fi
}
# FUZZ_JOBS targets at once (each libFuzzer is one process on one core).
# shellcheck disable=SC2086
set -- $targets
while [ $# -gt 0 ]; do
        batch="" pids=""
        for _ in $(seq "$jobs"); do
                [ $# -gt 0 ] || break
                echo "== fuzz_$1 for ${seconds}s"
                fuzz_one "$1" &
                pids="$pids $!" batch="$batch $1"
                shift
        done
        # shellcheck disable=SC2086
        wait $pids
        for target in $batch; do
                if [ -e "$out/fuzz_$target.failed" ]; then
                        tail -40 "$out/fuzz_$target.log" >&2
                        echo "fuzz_$target found a crash: $out/crash_${target}_*" >&2
                        exit 1
                fi
                grep -E "^#[0-9]+ *DONE" "$out/fuzz_$target.log" || tail -2 "$out/fuzz_$target.log"
        done
done
