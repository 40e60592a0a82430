#!/usr/bin/env bash
# Prove Rumi on arm64 (a Raspberry Pi's userland) by running it, not by listing wheels:
#
#   scripts/arm64_smoke.sh [--cache DIR] [--mirror URL]        (root; Debian/Ubuntu host)
#
# 1. qemu-user-static + a binfmt_misc entry for aarch64 (registered with the F flag if absent);
# 2. a Debian bookworm arm64 root (debootstrap --arch=arm64, minbase + python3-venv), kept in
#    DIR (default /var/cache/rumi-ci) under a name hashed from what it contains, and reused;
# 3. a throw-away copy of that root gets a venv with Rumi's wheel, built here from this checkout,
#    and its dependencies from PyPI for aarch64, installed by pip running emulated. The root has
#    no compiler: a dependency that would need compiling on a Pi fails here as well;
# 4. scripts/arm64_smoke.py runs `rumi doctor`, `rumi models verify` and `rumi chat` (answer +
#    recall) inside it, emulated, against the fake Groq and Telegram servers started here.
# Everything mounted is unmounted and the copy removed on any exit. Prints the time of each
# phase as one JSON line; exits 1 with a one-line reason on failure.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${RUMI_ARM64_CACHE:-/var/cache/rumi-ci}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE="bookworm"
PACKAGES="python3,python3-venv,ca-certificates"
SHARED="${RUMI_SHARED_DIR:-$(cd "$REPO/.." && pwd)/shared}"
PYTHON="${PYTHON:-python3}"   # this host's Python with Rumi's test dependencies (the fakes)
ROOT_VERSION=1                # bump to rebuild every cached root

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --cache) CACHE="${2:?--cache needs a directory}"; shift ;;
    --mirror) MIRROR="${2:?--mirror needs a URL}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

fail() { echo "arm64 smoke: FAIL: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
T0=$(now)

# Whatever happens, nothing stays mounted and no half-made tree stays behind; the cached root
# itself is never touched. A tree that cannot be unmounted is left rather than risk deleting
# through a mount.
WORK=""
NEW=""
remove_tree() {
  [ -n "$1" ] && [ -e "$1" ] || return 0
  local point
  for point in $(awk -v d="$1/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do
    umount "$point" 2>/dev/null || umount -l "$point" 2>/dev/null || true
  done
  if awk -v d="$1/" 'index($2, d) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
    echo "arm64 smoke: something is still mounted under $1; left in place" >&2
  else
    rm -rf --one-file-system "$1"
  fi
}
cleanup() {
  local status=$?
  remove_tree "$WORK"
  remove_tree "$NEW"
  [ -z "$NEW" ] || rm -f "$NEW.log"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot and mounts)"
[ -r "$SHARED/models/all-MiniLM-L6-v2-onnx/model.onnx" ] \
  || fail "the shared embedding model is missing under $SHARED (set RUMI_SHARED_DIR)"
"$PYTHON" -c "import aiohttp, rumi" 2>/dev/null \
  || fail "$PYTHON lacks the test dependencies (activate the dev venv or set PYTHON)"

# --- 1. emulation ------------------------------------------------------------------------------
need=()
command -v qemu-aarch64-static >/dev/null 2>&1 || need+=(qemu-user-static)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; } \
    >/dev/null 2>&1 || fail "cannot install ${need[*]} with apt-get"
fi
BINFMT=/proc/sys/fs/binfmt_misc
if [ ! -e "$BINFMT/register" ]; then
  mount -t binfmt_misc binfmt_misc "$BINFMT" 2>/dev/null \
    || fail "cannot mount binfmt_misc at $BINFMT (the kernel or container forbids it)"
fi
if [ ! -e "$BINFMT/qemu-aarch64" ]; then
  CONF=/usr/lib/binfmt.d/qemu-aarch64.conf
  [ -r "$CONF" ] || fail "qemu-user-static installed no $CONF"
  grep -q ':[A-Z]*F[A-Z]*$' "$CONF" || fail "$CONF lacks the F flag (needed inside a chroot)"
  cat "$CONF" >"$BINFMT/register" 2>/dev/null || fail "cannot register aarch64 in binfmt_misc"
fi
grep -qx enabled "$BINFMT/qemu-aarch64" || fail "the binfmt_misc aarch64 entry is disabled"
grep -q '^flags:.*F' "$BINFMT/qemu-aarch64" \
  || fail "the binfmt_misc aarch64 entry lacks the F flag: echo -1 >$BINFMT/qemu-aarch64, rerun"

# --- 2. the arm64 root, cached -----------------------------------------------------------------
KEY=$(printf '%s\n' "$ROOT_VERSION" arm64 "$SUITE" minbase "$PACKAGES" | sha256sum | cut -c1-12)
BASE="$CACHE/arm64-$SUITE-$KEY"
mkdir -p "$CACHE"
T=$(now)
if [ -x "$BASE/usr/bin/python3" ]; then
  ROOT_STATE=cached
else
  ROOT_STATE=built
  NEW=$(mktemp -d "$CACHE/.arm64-build.XXXXXX")
  chmod 755 "$NEW"   # it becomes the root directory of the arm64 system
  echo "debootstrap --arch=arm64 $SUITE (under emulation: several minutes)…" >&2
  if ! debootstrap --arch=arm64 --variant=minbase --include="$PACKAGES" "$SUITE" "$NEW" \
      "$MIRROR" >"$NEW.log" 2>&1; then
    tail -n 20 "$NEW.log" >&2
    fail "debootstrap of the arm64 root failed (log above)"
  fi
  rm -rf "$NEW/var/cache/apt/archives/"*.deb "$NEW/var/lib/apt/lists/"*
  rm -f "$NEW.log"
  # a finished root appears under its final name at once; a concurrent run may have won
  mv -T "$NEW" "$BASE" 2>/dev/null || remove_tree "$NEW"
  NEW=""
fi
DEBOOTSTRAP_S=$(since "$T")

# --- 3. a throw-away copy with Rumi installed ---------------------------------------------------
WORK=$(mktemp -d "$CACHE/run.XXXXXX")
ROOT="$WORK/root"
bind() {  # bind SOURCE TARGET [ro]
  mkdir -p "$2"
  mount --bind "$1" "$2"
  [ "${3:-}" != ro ] || mount -o remount,bind,ro "$2"
}

T=$(now)
cp -a "$BASE" "$ROOT"
[ "$(chroot "$ROOT" /usr/bin/uname -m)" = aarch64 ] \
  || fail "binaries of the arm64 root do not run as aarch64 (binfmt_misc/qemu)"
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
# CAs this host adds (e.g. an egress proxy's) join the copy's bundle, so pip can reach PyPI
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cat /usr/local/share/ca-certificates/*.crt >>"$ROOT/etc/ssl/certs/ca-certificates.crt"
fi
mkdir -p "$ROOT/proc" "$WORK/src" "$WORK/dist"
mount -t proc proc "$ROOT/proc"
bind /dev "$ROOT/dev"
bind "$SHARED" "$ROOT/opt/rumi-shared" ro

# the wheel is built from a copy, so the checkout gets no build/ or egg-info
cp "$REPO/pyproject.toml" "$REPO/README.md" "$WORK/src/"
for extra in "$REPO"/LICENSE*; do [ ! -e "$extra" ] || cp "$extra" "$WORK/src/"; done
tar -C "$REPO" --exclude=__pycache__ --exclude='*.pyc' -cf - rumi | tar -C "$WORK/src" -xf -
"$PYTHON" -m pip wheel -q --no-deps -w "$WORK/dist" "$WORK/src" >"$WORK/wheel.log" 2>&1 \
  || { tail -n 20 "$WORK/wheel.log" >&2; fail "cannot build Rumi's wheel from this checkout"; }
WHEEL=$(cd "$WORK/dist" && ls rumi-*.whl)
cp "$WORK/dist/$WHEEL" "$ROOT/tmp/"
RUN=(chroot "$ROOT" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8
     PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_CERT=/etc/ssl/certs/ca-certificates.crt)
"${RUN[@]}" python3 -m venv /opt/rumi
if ! "${RUN[@]}" /opt/rumi/bin/pip install -q --prefer-binary "/tmp/$WHEEL" >"$WORK/pip.log" 2>&1
then
  tail -n 20 "$WORK/pip.log" >&2
  fail "pip could not install Rumi in the arm64 root (log above)"
fi
INSTALL_S=$(since "$T")

# --- 4. the smoke, under emulation ----------------------------------------------------------------
T=$(now)
RESULT=$("$PYTHON" "$REPO/scripts/arm64_smoke.py" --root "$ROOT" --rumi /opt/rumi/bin/rumi \
           --shared /opt/rumi-shared --machine aarch64) || fail "the smoke did not pass (above)"
SMOKE_S=$(since "$T")
printf '{"arm64_smoke": {"root": "%s", "debootstrap_s": %s, "install_s": %s, "smoke_s": %s, ' \
  "$ROOT_STATE" "$DEBOOTSTRAP_S" "$INSTALL_S" "$SMOKE_S"
printf '"total_s": %s, "wheel": "%s", "run": %s}}\n' "$(since "$T0")" "$WHEEL" "$RESULT"
