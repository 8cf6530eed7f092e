# shellcheck shell=bash
# Helpers shared by scripts/vm-run and its parts: messages, host tools, the cache directory.
# Sourced, not run. Callers set VM_QUIET=1 to silence progress messages (errors still print).

vm_t0=${EPOCHREALTIME//[^0-9]/}

# Seconds since vm-run started, as "12.34".
vm_elapsed() {
  local cs=$(((${EPOCHREALTIME//[^0-9]/} - vm_t0) / 10000))
  printf '%d.%02d' $((cs / 100)) $((cs % 100))
}

log() { [ "${VM_QUIET:-0}" = 1 ] || echo "vm-run: [$(vm_elapsed)s] $*" >&2; }
warn() { echo "vm-run: warning: $*" >&2; }

# vm-run's own failures exit 125, so they cannot be mistaken for the command's status
# (the same convention as env(1) and timeout(1)).
die() {
  echo "vm-run: error: $*" >&2
  exit 125
}

# set -e ends a script silently: say where, and exit with vm-run's own status. Only in the main
# shell: in $(...) a failure is the caller's to judge; status 125 is a die() already reported.
set -o errtrace
trap 'vm_on_error $? "${BASH_SOURCE[0]##*/}:$LINENO" "$BASH_COMMAND"' ERR
vm_on_error() {
  [ "$BASHPID" = "$$" ] || return 0
  [ "$1" = 125 ] || echo "vm-run: error: unexpected failure (status $1) at $2: $3" >&2
  exit 125
}

# need_tools CMD:PACKAGE... installs the packages whose commands are missing (as root, from the
# machine's own apt sources), or says which to install.
need_tools() {
  local spec missing=()
  for spec in "$@"; do
    command -v "${spec%%:*}" >/dev/null || missing+=("${spec#*:}")
  done
  need_packages "${missing[@]}"
}

# need_packages PACKAGE... installs those not installed (dpkg's view), as need_tools does.
need_packages() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] ||
    die "missing packages: ${missing[*]} (apt-get install ${missing[*]}, or run scripts/install-deps as root)"
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # The package lists may be stale or absent (fresh container): update once, then retry.
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 || true
      apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } ||
    die "could not install ${missing[*]} with apt-get"
}

# cache_init sets VM_CACHE and takes the cache lock on fd 9: two first runs must not
# download or unpack the same kernel into the same place at once. cache_unlock releases it
# before the boot, so runs on a warm cache proceed in parallel.
cache_init() {
  VM_CACHE=${FABEMU_VM_CACHE:-/var/cache/fabemu-vm}
  # A user without root cannot create /var/cache/...: fall back to their own cache.
  if [ -z "${FABEMU_VM_CACHE:-}" ] && ! mkdir -p "$VM_CACHE" 2>/dev/null; then
    VM_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/fabemu-vm
  fi
  mkdir -p "$VM_CACHE" || die "cannot create the cache directory $VM_CACHE"
  VM_CACHE=$(cd "$VM_CACHE" && pwd -P)
  exec 9>"$VM_CACHE/.lock"
  flock 9
}

cache_unlock() { exec 9>&-; }

# sha_of FILE... prints a short digest of the files' contents (cache keys).
sha_of() { cat "$@" | sha256sum | cut -c1-16; }
