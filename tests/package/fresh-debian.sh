#!/bin/bash
# By hand (network to the Debian mirror, root, ~5 min): a fresh Debian 12 (debootstrap minbase) as
# the root of a private mount namespace; apt install ./fabemu_*.deb in it, import fabemu, and the
# installed example pytest suite as root (must pass) and as nobody (must skip, saying why).
# Usage: tests/package/fresh-debian.sh build/fabemu_VERSION_amd64.deb
set -eu
deb=$1
base=$(mktemp -d /var/tmp/fabemu-freshdeb-XXXX)
chmod 755 "$base"  # it becomes /
trap 'rm -rf "$base"' EXIT
debootstrap --variant=minbase bookworm "$base" http://deb.debian.org/debian > /dev/null
cp "$deb" "$base/root/"
cat > "$base/root/inside.sh" <<'EOF'
set -eu
export DEBIAN_FRONTEND=noninteractive PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
apt-get update -q > /dev/null
t0=$(date +%s)
apt-get install -y -q /root/fabemu_*.deb > /root/apt.log 2>&1
echo "apt install ./fabemu.deb: $(( $(date +%s) - t0 )) s, $(grep -c '^Setting up' /root/apt.log) packages set up"
cd /root
python3 -c 'import fabemu, sys; print("import fabemu", fabemu.__version__, "from", fabemu.__file__)'
t0=$(date +%s)
apt-get install -y -q python3-pytest python3-torch > /root/apt2.log 2>&1
echo "the examples' own needs (python3-pytest python3-torch): $(( $(date +%s) - t0 )) s"
cp -r /usr/share/doc/fabemu/examples/pytest /root/ex
chmod -R a+rX /root/ex; chmod a+x /root
echo "--- pytest as root"; (cd /root/ex && python3 -m pytest -q -p no:cacheprovider . 2>&1 | tail -3)
echo "--- pytest as nobody"; (cd /root/ex && runuser -u nobody -- python3 -m pytest -q -p no:cacheprovider -rs . 2>&1 | tail -4)
EOF
unshare --mount --fork bash -c '
set -eu; new=$1
mount --make-rprivate /
mount --bind "$new" "$new"
mount -t proc proc "$new/proc"; mount --rbind /sys "$new/sys"; mount --rbind /dev "$new/dev"
mount -t tmpfs tmpfs "$new/run"; mount -t tmpfs tmpfs "$new/tmp"
cp /etc/resolv.conf "$new/etc/resolv.conf"; mkdir -p "$new/.old"; cd "$new"
pivot_root . .old; umount -l /.old; rmdir /.old
bash /root/inside.sh' inner "$base"
