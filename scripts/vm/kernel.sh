# shellcheck shell=bash
# The guest kernel for scripts/vm-run: a Debian suite's newest linux-image-*-amd64 (fetched with
# apt-get download), a .deb, or an unpacked tree; unpacked and depmod'ed once into the cache.
# Sourced. kernel_prepare ARG sets:
#   KVER     the kernel release (`uname -r` in the guest)
#   VMLINUZ  the kernel image (bzImage)
#   BOOT_IMAGE  what qemu boots: VMLINUZ, or the uncompressed kernel extracted from it
#   MODBASE  the directory holding lib/modules/$KVER (for depmod -b and modprobe -d)
#   MODDIR   $MODBASE/lib/modules/$KVER, with depmod's output in it

kernel_prepare() {
  local arg=$1
  if [ -d "$arg" ]; then
    kernel_use_tree "$(cd "$arg" && pwd -P)"
  elif [ -f "$arg" ] && [[ $arg == *.deb ]]; then
    kernel_from_deb "$(realpath "$arg")"
  elif [[ $arg =~ ^[a-z][a-z0-9.-]*$ ]]; then
    kernel_from_suite "$arg"
  else
    die "--kernel $arg: not a directory, a .deb file or a Debian suite name"
  fi
}

# --- a Debian suite, through a private apt configuration -------------------------------------

# apt_private SUITE sets APT_OPTS to an apt configuration that knows only SUITE, with its own
# lists, cache and (empty) dpkg status under the cache: the machine's apt state stays untouched.
apt_private() {
  local suite=$1
  APT_DIR=$VM_CACHE/apt/$suite
  mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial" "$APT_DIR/empty.d"
  [ -e "$APT_DIR/status" ] || : >"$APT_DIR/status"
  APT_OPTS=(
    -o "Dir::Etc::sourcelist=$APT_DIR/sources.list" -o "Dir::Etc::sourceparts=$APT_DIR/empty.d"
    -o "Dir::Etc::preferencesparts=$APT_DIR/empty.d" -o "Dir::Etc::preferences=/dev/null"
    -o "Dir::State::Lists=$APT_DIR/lists" -o "Dir::Cache=$APT_DIR/cache"
    -o "Dir::State::status=$APT_DIR/status" -o "APT::Default-Release="
    -o "Acquire::Languages=none"
    # The cache belongs to root, not to apt's sandbox user: say so instead of a warning.
    -o "APT::Sandbox::User=$(id -un)"
  )
}

# apt_mirror prints the Debian archive URI of the machine's own suite, as apt itself reads it
# from sources.list and the deb822 *.sources files (apt-get indextargets), so no host name is
# written here. FABEMU_VM_MIRROR overrides it (e.g. on an Ubuntu machine).
apt_mirror() {
  if [ -n "${FABEMU_VM_MIRROR:-}" ]; then
    echo "$FABEMU_VM_MIRROR"
    return
  fi
  local codename uri
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  uri=$(apt-get indextargets --format '$(TARGET_OF) $(RELEASE) $(REPO_URI)' 2>/dev/null |
    awk -v c="$codename" '$1 == "deb" && $2 == c && !found { print $3; found = 1 }')
  [ -n "$uri" ] || die "no '$codename' suite in this machine's apt sources to take the Debian" \
    "mirror from; set FABEMU_VM_MIRROR=http://<debian mirror>/debian"
  echo "$uri"
}

# apt_update SUITE downloads SUITE's package index into the private lists.
apt_update() {
  local suite=$1 mirror
  mirror=$(apt_mirror)
  echo "deb $mirror $suite main" >"$APT_DIR/sources.list"
  log "reading the package index of $suite from $mirror"
  # apt-get update exits 0 on some fetch failures; -o APT::Update::Error-Mode=any is too new
  # for Debian 12, so also check that an index arrived.
  if ! apt-get "${APT_OPTS[@]}" update >"$APT_DIR/update.log" 2>&1 ||
    ! ls "$APT_DIR/lists/"*_Packages* >/dev/null 2>&1; then
    tail -n 5 "$APT_DIR/update.log" >&2
    die "suite $suite cannot be had from $mirror (log: $APT_DIR/update.log)"
  fi
}

# newest_image prints the newest plain linux-image-<release>-amd64 (not -cloud, -rt or a meta
# package) in the private index.
newest_image() {
  apt-cache "${APT_OPTS[@]}" pkgnames linux-image- |
    grep -E '^linux-image-[0-9].*-amd64$' | grep -Ev -- '-(cloud|rt)-amd64$' | sort -V | tail -n 1
}

# kernel_from_suite SUITE pins SUITE to its newest kernel on first use (or with --refresh) and
# reuses the pinned, unpacked kernel afterwards without touching the network.
kernel_from_suite() {
  local suite=$1 pin=$VM_CACHE/suites/$1 pkg version
  apt_private "$suite"
  if [ "${VM_REFRESH:-0}" = 1 ] || [ ! -s "$pin" ]; then
    apt_update "$suite"
    pkg=$(newest_image)
    [ -n "$pkg" ] || die "suite $suite has no linux-image-*-amd64 package"
    version=$(apt-cache "${APT_OPTS[@]}" show --no-all-versions "$pkg" | awk '/^Version:/ { print $2; exit }')
    mkdir -p "$VM_CACHE/suites"
    echo "$pkg $version" >"$pin"
  fi
  read -r pkg version <"$pin"
  local tree=$VM_CACHE/kernels/${pkg#linux-image-}_$version
  if [ ! -e "$tree/.unpacked" ]; then
    ls "$APT_DIR/lists/"*_Packages* >/dev/null 2>&1 || apt_update "$suite"
    # From 6.19 on linux-image-<v> is a meta package: the kernel is in linux-binary-<v>, the
    # modules in linux-modules-<v>, modules.builtin and the config in linux-base-<v>.
    local parts
    parts=$(apt-cache "${APT_OPTS[@]}" depends --no-recommends --no-suggests "$pkg" |
      awk -v v="$version" '$1 ~ /Depends:$/ && $2 ~ /^linux-(binary|modules|base)-/ { print $2 "=" v }')
    mkdir -p "$VM_CACHE/debs"
    log "downloading $pkg $version" ${parts:+"and its parts"}
    # shellcheck disable=SC2086 # $parts is a list of package=version words
    (cd "$VM_CACHE/debs" && apt-get "${APT_OPTS[@]}" download "$pkg=$version" $parts) \
      >"$APT_DIR/download.log" 2>&1 || { tail -n 5 "$APT_DIR/download.log" >&2
      die "could not download $pkg $version from $suite (log: $APT_DIR/download.log)"; }
    local debs=("$VM_CACHE/debs/${pkg}_"*.deb) p
    for p in $parts; do debs+=("$VM_CACHE/debs/${p%%=*}_"*.deb); done
    unpack_debs "$tree" "${debs[@]}"
  fi
  kernel_use_tree "$tree"
}

# --- a .deb given by path ------------------------------------------------------------------------

# kernel_from_deb DEB unpacks DEB together with the linux-{binary,modules,base}-<v> packages
# lying next to it (the split packages of 6.19 and later).
kernel_from_deb() {
  local deb=$1 pkg version kver debs p f
  if ! pkg=$(dpkg-deb -f "$deb" Package) || ! version=$(dpkg-deb -f "$deb" Version); then
    die "$deb is not a Debian package"
  fi
  [[ $pkg == linux-image-* ]] || die "$deb is $pkg, not a linux-image-* package"
  kver=${pkg#linux-image-}
  local tree=$VM_CACHE/kernels/${kver}_$version
  if [ ! -e "$tree/.unpacked" ]; then
    debs=("$deb")
    for p in binary modules base; do
      for f in "$(dirname "$deb")/linux-$p-${kver}_"*.deb; do
        if [ -e "$f" ]; then debs+=("$f"); fi
      done
    done
    unpack_debs "$tree" "${debs[@]}"
  fi
  kernel_use_tree "$tree"
}

# unpack_debs TREE DEB... extracts the packages (dpkg -x) and runs depmod, into a temporary
# directory renamed at the end, so an interrupted run leaves nothing that looks complete.
unpack_debs() {
  local tree=$1 deb
  shift
  log "unpacking ${*##*/}"
  rm -rf "$tree.tmp" && mkdir -p "$tree.tmp"
  for deb in "$@"; do dpkg-deb -x "$deb" "$tree.tmp" || die "cannot unpack $deb"; done
  (kernel_use_tree "$tree.tmp" && extract_vmlinux "$tree.tmp") # depmod; temporary paths
  rm -rf "$tree" && mv "$tree.tmp" "$tree" && touch "$tree/.unpacked"
}

# extract_vmlinux TREE writes TREE/vmlinux.pvh, the uncompressed kernel, when the kernel can be
# entered that way (CONFIG_PVH): qemu then boots it directly, which saves the ~1.5 s a bzImage
# takes to decompress itself under TCG. The payload is found by its compressor's magic bytes,
# as the kernel's scripts/extract-vmlinux does.
extract_vmlinux() {
  local tree=$1 config magic cmd offset
  config=$(find "$tree" -path '*/modules/*/config' -o -name 'config-*' -path '*/boot/*' | head -n 1)
  [ -n "$config" ] && grep -q '^CONFIG_PVH=y' "$config" || return 0
  case $(grep -o '^CONFIG_KERNEL_[A-Z0-9]*=y' "$config") in
    *ZSTD*) magic='\x28\xb5\x2f\xfd' cmd='zstd -qdc' ;;
    *XZ*) magic='\xfd7zXZ' cmd='xz -qdc' ;;
    *GZIP*) magic='\x1f\x8b\x08' cmd='gzip -qdc' ;;
    *) return 0 ;;
  esac
  offset=$(LC_ALL=C grep -abo -m 1 "$(printf '%b' "$magic")" "$VMLINUZ" | head -n 1 | cut -d: -f1)
  [ -n "$offset" ] || return 0
  # The decompressors complain about the bytes after the payload: only the ELF header counts.
  tail -c +$((offset + 1)) "$VMLINUZ" | $cmd >"$tree/vmlinux.pvh" 2>/dev/null || true
  [ "$(head -c 4 "$tree/vmlinux.pvh" | od -An -c | tr -d ' ')" = '177ELF' ] || rm -f "$tree/vmlinux.pvh"
}

# --- an unpacked tree ----------------------------------------------------------------------------

# kernel_use_tree DIR finds the image and modules in DIR (boot/vmlinuz-<v> up to 6.18,
# usr/lib/modules/<v>/vmlinuz from 6.19) and runs depmod if nobody has.
kernel_use_tree() {
  local dir=$1 f
  VMLINUZ=
  for f in "$dir"/boot/vmlinuz-* "$dir"/{usr/,}lib/modules/*/vmlinuz; do
    if [ -e "$f" ]; then VMLINUZ=$f; fi
  done
  [ -n "$VMLINUZ" ] || die "no kernel image in $dir (a split 6.19+ kernel needs linux-binary-<v>.deb next to the image .deb)"
  BOOT_IMAGE=$VMLINUZ
  [ ! -e "$dir/vmlinux.pvh" ] || BOOT_IMAGE=$dir/vmlinux.pvh
  case $VMLINUZ in
    */boot/vmlinuz-*) KVER=${VMLINUZ##*/vmlinuz-} ;;
    *) KVER=$(basename "$(dirname "$VMLINUZ")") ;;
  esac
  # depmod -b/modprobe -d look in BASE/lib/modules: newer packages have only usr/lib/modules.
  if [ -d "$dir/lib/modules/$KVER" ]; then MODBASE=$dir; else MODBASE=$dir/usr; fi
  MODDIR=$MODBASE/lib/modules/$KVER
  [ -d "$MODDIR/kernel" ] || die "no modules in $dir for $KVER (a split 6.19+ kernel needs linux-modules-<v>.deb next to the image .deb)"
  if [ ! -e "$MODDIR/modules.dep" ]; then
    log "depmod $KVER"
    depmod -b "$MODBASE" "$KVER" 2>"$dir/depmod.log" || die "depmod failed for $KVER (log: $dir/depmod.log)"
  fi
}
