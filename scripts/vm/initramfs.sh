# shellcheck shell=bash
# The VM lane's initramfs for one kernel: a static busybox, scripts/vm/init as /init, and the
# modules of scripts/vm/modules.list with their dependencies. Sourced.
# initramfs_prepare sets INITRD; it needs KVER, MODBASE and MODDIR (kernel.sh) and VM_CACHE.
# The image is cached under a digest of everything that goes into it, so editing the init
# script or the module list rebuilds it and nothing else does.

initramfs_prepare() {
  local busybox key
  busybox=$(dpkg -L busybox-static | grep -m 1 '/busybox$') || die "busybox-static is not installed"
  key=$(sha_of <(echo "$MODBASE") "$MODDIR/modules.dep" "$busybox" "$vm_dir/init" "$vm_dir/modules.list")
  INITRD=$VM_CACHE/initrd/$KVER-$key.img
  [ -e "$INITRD" ] && return 0

  log "building the initramfs for $KVER"
  local root
  root=$(mktemp -d)
  mkdir -p "$root"/{bin,dev,proc,sys,modules}
  cp "$busybox" "$root/bin/busybox"
  cp "$vm_dir/init" "$root/init"
  chmod 755 "$root/init"
  initramfs_add_modules "$root/modules"

  mkdir -p "$VM_CACHE/initrd"
  rm -f "$VM_CACHE/initrd/$KVER-"*.img # images of older script versions
  (cd "$root" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) | gzip -6 >"$INITRD.tmp"
  mv "$INITRD.tmp" "$INITRD"
  rm -rf "$root"
  log "initramfs $(($(stat -c %s "$INITRD") / 1024)) KiB: $INITRD"
}

# initramfs_add_modules DIR copies the listed modules and their dependencies into DIR,
# decompressed (busybox insmod cannot read .ko.xz or .ko.zst), and writes DIR/order: the load
# order, each module once, dependencies first.
initramfs_add_modules() {
  local dir=$1 ko name
  module_load_order | while read -r ko; do
    name=$(basename "$ko")
    name=${name%.xz} name=${name%.zst} name=${name%.gz}
    case $ko in
      *.xz) xz -dc "$ko" >"$dir/$name" ;;
      *.zst) zstd -qdc "$ko" >"$dir/$name" ;;
      *.gz) gzip -dc "$ko" >"$dir/$name" ;;
      *) cp "$ko" "$dir/$name" ;;
    esac
    echo "$name" >>"$dir/order"
  done
  touch "$dir/order"
}

# module_load_order prints the module files to load, from modprobe's own resolution against
# the unpacked tree: `-C /dev/null` so the host's modprobe.d (blacklists, options) does not
# apply, "builtin X" lines dropped, duplicates dropped keeping the first (dependency) position.
module_load_order() {
  local m deps
  grep -Ev '^[[:space:]]*(#|$)' "$vm_dir/modules.list" | while read -r m; do
    if ! deps=$(modprobe -C /dev/null -d "$MODBASE" -S "$KVER" --show-depends "$m" 2>&1); then
      warn "module $m is not in kernel $KVER: not loaded at boot"
      continue
    fi
    awk '$1 == "insmod" { print $2 }' <<<"$deps"
  done | awk '!seen[$0]++'
}
