#!/bin/sh
# Debian 12's own kernel for the cgroup v2 lane, unpacked (never installed) under a cache
# folder that later runs re-use:  scripts/vm/kernel.sh CACHE_DIR
# Prints the folder of the unpacked kernel: boot/vmlinuz-VERSION and lib/modules/VERSION,
# with modules.dep made by depmod so the initramfs can take the modules in load order.
set -eu
cache="$1"
mkdir -p "$cache"
cd "$cache"
# The version apt offers now: what the linux-image-amd64 meta-package depends on.
package="$(apt-cache depends linux-image-amd64 2>/dev/null |
        sed -n 's/^ *Depends: \(linux-image-[0-9.-]*-amd64\)$/\1/p' | head -n 1)"
if [ -z "$package" ]; then
        # No apt lists (a machine that never ran apt-get update): a kernel fetched before.
        package="$(ls -d kernel-linux-image-*-amd64 2>/dev/null | sed 's/^kernel-//' | tail -n 1)"
fi
[ -n "$package" ] || { echo "kernel.sh: apt offers no linux-image-amd64 and none is cached" >&2; exit 1; }
version="${package#linux-image-}"
dir="$cache/kernel-$package"
if [ ! -f "$dir/boot/vmlinuz-$version" ] || [ ! -f "$dir/lib/modules/$version/modules.dep" ]; then
        deb="$(ls "$package"_*_amd64.deb 2>/dev/null | tail -n 1 || true)"
        if [ -z "$deb" ]; then
                # apt-get download writes to the current folder as _apt when it can, as root
                # otherwise (the warning about the sandbox is expected).
                apt-get download -q "$package" >&2 2>/dev/null || apt-get download "$package" >&2
                deb="$(ls "$package"_*_amd64.deb | tail -n 1)"
        fi
        rm -rf "$dir.partial"
        dpkg-deb -x "$deb" "$dir.partial"
        depmod -b "$dir.partial" "$version"
        rm -rf "$dir"
        mv "$dir.partial" "$dir"
fi
echo "$dir"
