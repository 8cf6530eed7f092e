#!/usr/bin/env bash
# The Debian package as a user gets it: cpack builds it from this build tree, it is unpacked
# into a throwaway root (not installed on this machine), and from there: the Python package
# imports and registers its pytest plugin, the man page renders, the bash completion parses,
# the binaries find each other, and (as root) the example suite passes with the package's own
# fabemu. usage: check-deb.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
tmp=$(mktemp -d /tmp/fabemu-deb-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls -t "$build"/fabemu_*.deb | head -1)
echo "package: $(basename "$deb"), $(du -k "$deb" | cut -f1) KiB"
dpkg-deb -I "$deb" | grep -E '^ (Depends|Recommends):' | cut -c1-160
dpkg-deb -x "$deb" "$tmp/root"
usr=$tmp/root/usr
export PYTHONPATH=$usr/lib/python3/dist-packages FABEMU_BIN=$usr/bin/fabemu
/usr/bin/python3 - <<'PY'
import importlib.metadata as md
import fabemu
eps = [e for e in md.entry_points(group="pytest11") if e.name == "fabemu"]
assert eps and eps[0].value == "fabemu.pytest_plugin", eps
assert md.version("fabemu") == fabemu.__version__, md.version("fabemu")
print(f"python: import fabemu {fabemu.__version__} from {fabemu.__file__}; pytest11 entry point "
      f"{eps[0].value}; binary {fabemu.binary()}")
PY
man -l "$usr/share/man/man1/fabemu.1" 2>/dev/null | grep -q "fabemu run" || { echo "man page: no 'fabemu run'"; exit 1; }
bash -n "$usr/share/bash-completion/completions/fabemu"
"$usr/bin/fabemu" --help >/dev/null
[ -x "$usr/bin/fabemu-collective" ] && [ -x "$usr/share/fabemu/scripts/vm-run" ]
[ -f "$usr/share/fabemu/scenarios/default.yaml" ]
echo "man page, completion, binaries, scenarios, vm-run: ok"
if [ "$(id -u)" -eq 0 ]; then
  cp -r "$usr/share/doc/fabemu/examples/pytest" "$tmp/examples"
  # The plugin comes from the entry point alone: no -p, as for a user with the package.
  (cd "$tmp" && /usr/bin/python3 -m pytest -q -p no:cacheprovider -p no:hypothesispytest examples)
fi
