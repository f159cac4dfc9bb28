#!/bin/sh
# The root of the container tests' image (make test-containers): Debian 12 made with
# debootstrap from the apt mirror this machine uses (no registry pull), with Ruby, Python and
# the libraries codecell loads, and the built codecell as /usr/bin/codecell; as a tarball that
# `docker import` and `podman import` take.
#   scripts/containers/image.sh BUILD_DIR      prints the tarball's path
# The debootstrapped root is kept in BUILD_DIR/container/ for the next run; the tarball is made
# again when the binary changed.
set -eu
build="$(cd "$1" && pwd)"
dir="$build/container"
root="$dir/root"
mkdir -p "$dir"
# The mirror apt uses here (deb822 sources or sources.list), else Debian's own.
mirror="$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)"
[ -n "$mirror" ] || mirror="$(sed -n 's/^deb  *\(http[^ ]*\) .*/\1/p' /etc/apt/sources.list 2>/dev/null | head -n 1)"
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
if [ ! -f "$root/.codecell-complete" ]; then
        rm -rf "$root"
        # The libraries codecell links (seccomp, jansson, libedit) and those it loads at run
        # time (libcurl, OpenSSL, libmicrohttpd).
        debootstrap --variant=minbase \
                --include=ruby,python3,libseccomp2,libjansson4,libedit2,libcurl4,libssl3,libmicrohttpd12,ca-certificates \
                bookworm "$root" "$mirror" >"$dir/debootstrap.log" 2>&1 ||
                { tail -n 20 "$dir/debootstrap.log" >&2; exit 1; }
        rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
        touch "$root/.codecell-complete"
fi
if ! cmp -s "$build/codecell" "$root/usr/bin/codecell"; then
        install -m 0755 "$build/codecell" "$root/usr/bin/codecell"
        rm -f "$dir/root.tar"
fi
if [ ! -f "$dir/root.tar" ]; then
        tar -C "$root" --numeric-owner -cf "$dir/root.tar.partial" --exclude=./.codecell-complete .
        mv "$dir/root.tar.partial" "$dir/root.tar"
fi
echo "$dir/root.tar"
