#!/bin/sh
# The lane's initramfs: busybox, the modules that mount the host's folders over 9p (virtio,
# netfs, fscache, 9p, in the load order `modprobe --show-depends` gives), overlay (the systemd
# lane's root) and scripts/vm/init.
#   scripts/vm/initramfs.sh KERNEL_DIR OUT.cpio.gz
set -eu
kernel="$1"
out="$2"
here="$(cd "$(dirname "$0")" && pwd)"
version="$(ls "$kernel/lib/modules")"
busybox="$(command -v busybox)"
# busybox-static: the initramfs has no libc of its own.
if ldd "$busybox" >/dev/null 2>&1; then
        echo "initramfs.sh: $busybox is linked dynamically (install busybox-static)" >&2
        exit 1
fi
root="$(mktemp -d /tmp/codecell-initramfs-XXXXXX)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/modules"
cp "$busybox" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
: >"$root/modules/order"
for module in virtio_pci 9pnet_virtio 9p overlay; do
        modprobe -d "$kernel" -S "$version" --show-depends "$module" | while read -r verb path _; do
                [ "$verb" = insmod ] || continue
                name="$(basename "$path")"
                # Each module once, where it first appears: its dependencies come before it.
                grep -qx "$name" "$root/modules/order" && continue
                cp "$path" "$root/modules/$name"
                echo "$name" >>"$root/modules/order"
        done
done
cp "$here/init" "$root/init"
chmod 755 "$root/init"
(cd "$root" && find . | "$busybox" cpio -o -H newc 2>/dev/null | gzip -1) >"$out.partial"
mv "$out.partial" "$out"
