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
inc="-I$root/include -I$root/src/lib -I$root/src/cli -I$root/src/mcp -DCODECELL_VERSION=\"fuzz\""
lib_sources="$(ls "$root"/src/lib/*.c)"
# The preludes the library embeds, generated as the CMake build does.
for lang in ruby python; do
        ext=rb; [ "$lang" = python ] && ext=py
        cmake -DIN="$root/guest/$lang/prelude.$ext" -DOUT="$out/prelude_$lang.c" \
              -DNAME="codecell_prelude_$lang" -P "$root/cmake/embed.cmake"
done
for target in frame mount_rules tools_file units config_file mcp_message; do
        extra=""
        [ "$target" = units ] && extra="$root/src/cli/units.c"
        [ "$target" = mcp_message ] && extra="$(ls "$root"/src/mcp/*.c) -lmicrohttpd"
        # shellcheck disable=SC2086
        clang $flags $inc -o "$out/fuzz_$target" "$here/fuzz_$target.c" $extra $lib_sources \
                "$out/prelude_ruby.c" "$out/prelude_python.c" -lseccomp -ljansson -lpthread -lm
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
