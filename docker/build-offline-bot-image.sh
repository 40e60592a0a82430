#!/usr/bin/env bash
# Build Rumi's bot image (docker/Dockerfile) on a host that cannot pull from a registry.
#
#   docker/build-offline-bot-image.sh [--tag TAG] [--base-tag TAG] [--rebuild-base] [--mirror URL]
#
# 1. A local base image (default rumi-base:bookworm) from `debootstrap --variant=minbase
#    bookworm` with python3 + python3-venv (Debian's Python 3.11, like python:3.11-slim),
#    imported with `docker import`. Built once; reused until --rebuild-base. Certificates the
#    host trusts in /usr/local/share/ca-certificates (e.g. an egress proxy's CA) are added to
#    this local base only, so pip in the build can reach PyPI through that proxy.
# 2. docker build -f docker/Dockerfile --build-arg BASE_IMAGE=<base> -t <tag> <repo>
#    pip inside the build still needs PyPI (dependencies are binary wheels).
set -euo pipefail

TAG="rumi:local"
BASE_TAG="rumi-base:bookworm"
REBUILD_BASE=0
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
REPO="$(cd "$(dirname "$0")/.." && pwd)"

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) TAG="${2:?--tag needs a value}"; shift ;;
    --base-tag) BASE_TAG="${2:?--base-tag needs a value}"; shift ;;
    --rebuild-base) REBUILD_BASE=1 ;;
    --mirror) MIRROR="${2:?--mirror needs a value}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

command -v docker >/dev/null || { echo "docker CLI not found" >&2; exit 1; }

build_base() {
  command -v debootstrap >/dev/null || { echo "debootstrap not found (apt-get install debootstrap)" >&2; exit 1; }
  [ "$(id -u)" = 0 ] || { echo "debootstrap needs root" >&2; exit 1; }
  local work root
  work="$(mktemp -d "${TMPDIR:-/tmp}/rumi-bot-base.XXXXXX")"
  # shellcheck disable=SC2064
  trap "rm -rf --one-file-system '$work'" EXIT INT TERM
  root="$work/rootfs"
  echo "debootstrap bookworm + python3 from $MIRROR (a minute or two)…"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    chroot "$root" update-ca-certificates >/dev/null 2>&1 || true
    # pip uses its own certifi bundle unless told otherwise
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$root/etc/pip.conf"
    echo "added the host's extra CA certificates to the local base"
  fi
  rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"* \
         "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/info" "$root/var/log/"*.log
  tar --numeric-owner -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' - "$BASE_TAG" >/dev/null
  rm -rf --one-file-system "$work"
  trap - EXIT INT TERM
  echo "built base $BASE_TAG"
}

if [ "$REBUILD_BASE" = 1 ] || ! docker image inspect "$BASE_TAG" >/dev/null 2>&1; then
  build_base
else
  echo "reusing base $BASE_TAG"
fi

docker build -q -f "$REPO/docker/Dockerfile" --build-arg BASE_IMAGE="$BASE_TAG" -t "$TAG" "$REPO" >/dev/null
echo "built $TAG: $(docker image inspect -f '{{.Size}}' "$TAG") bytes"
