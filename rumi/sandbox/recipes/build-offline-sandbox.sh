#!/usr/bin/env bash
# Build Rumi's sandbox image without any registry, from a root filesystem made on this machine.
#
#   docker/build-offline-sandbox.sh [--minimal] [--tag TAG] [--mirror URL] [--print-tag]
#
# TAG defaults to the tag Rumi looks for, rumi-sandbox:<version>-<recipe hash> (what
# docker/sandbox-tag.sh prints; --print-tag prints it and stops).
# default    debootstrap --variant=minbase bookworm (bash, coreutils, python3, git, procps) — the
#            same contents as docker/sandbox.Dockerfile, for air-gapped hosts and CI (~1-2 min)
# --minimal  busybox-static only (~2 MB, has sh/timeout/ps but no bash or python3) for quick tests
#
# Either way: user 1000 ("sandbox"), /workspace owned by 1000 (a fresh named volume copies that
# ownership), HOME=/workspace, no curl/wget. The root filesystem is packed as a tar so
# `FROM scratch` + `ADD` keeps file ownership. Idempotent; temporary files are always removed.
set -euo pipefail

TAG=""
PRINT_TAG=0
MINIMAL=0
SUITE="bookworm"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES="bash,coreutils,python3,git,procps"
NO_APPLETS="wget curl nc ftpget ftpput tftp tftpd telnet telnetd httpd ssl_client udhcpc udhcpd"

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --minimal) MINIMAL=1 ;;
    --tag) TAG="${2:?--tag needs a value}"; shift ;;
    --mirror) MIRROR="${2:?--mirror needs a value}"; shift ;;
    --print-tag) PRINT_TAG=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

if [ -z "$TAG" ]; then
  TAG_HELPER="$(dirname "$0")/sandbox-tag.sh"
  [ -f "$TAG_HELPER" ] || { echo "no --tag given and no sandbox-tag.sh beside $0" >&2; exit 2; }
  TAG="$(bash "$TAG_HELPER")"
fi
if [ "$PRINT_TAG" = 1 ]; then echo "$TAG"; exit 0; fi

command -v docker >/dev/null || { echo "docker CLI not found" >&2; exit 1; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/rumi-sandbox-build.XXXXXX")"
cleanup() { rm -rf --one-file-system "$WORK"; }
trap cleanup EXIT INT TERM
ROOT="$WORK/rootfs"
mkdir -p "$ROOT"

add_sandbox_user() {
  # Written directly (no chroot/useradd) so it also works for the busybox root.
  mkdir -p "$ROOT/etc" "$ROOT/workspace" "$ROOT/tmp"
  touch "$ROOT/etc/passwd" "$ROOT/etc/group"
  grep -q '^root:' "$ROOT/etc/passwd" || echo 'root:x:0:0:root:/root:/bin/sh' >>"$ROOT/etc/passwd"
  grep -q '^root:' "$ROOT/etc/group" || echo 'root:x:0:' >>"$ROOT/etc/group"
  grep -q '^sandbox:' "$ROOT/etc/passwd" \
    || echo "sandbox:x:1000:1000:Rumi sandbox:/workspace:$1" >>"$ROOT/etc/passwd"
  grep -q '^sandbox:' "$ROOT/etc/group" || echo 'sandbox:x:1000:' >>"$ROOT/etc/group"
  chown 1000:1000 "$ROOT/workspace"
  chmod 0755 "$ROOT/workspace"
  chmod 1777 "$ROOT/tmp"
}

if [ "$MINIMAL" = 1 ]; then
  BUSYBOX="$(command -v busybox || true)"
  [ -n "$BUSYBOX" ] || { echo "busybox not found (apt-get install busybox-static)" >&2; exit 1; }
  if ldd "$BUSYBOX" >/dev/null 2>&1; then
    echo "$BUSYBOX is dynamically linked; install busybox-static" >&2; exit 1
  fi
  mkdir -p "$ROOT/bin" "$ROOT/usr/bin" "$ROOT/proc" "$ROOT/dev" "$ROOT/sys"
  cp "$BUSYBOX" "$ROOT/bin/busybox"
  for applet in $("$BUSYBOX" --list); do
    case " $NO_APPLETS " in *" $applet "*) continue ;; esac  # no downloaders or servers
    [ -e "$ROOT/bin/$applet" ] || ln -s busybox "$ROOT/bin/$applet"
  done
  for applet in env; do ln -sf ../../bin/busybox "$ROOT/usr/bin/$applet"; done
  add_sandbox_user /bin/sh
  LABEL_FLAVOUR="minimal"
else
  command -v debootstrap >/dev/null || { echo "debootstrap not found (apt-get install debootstrap)" >&2; exit 1; }
  [ "$(id -u)" = 0 ] || { echo "debootstrap needs root" >&2; exit 1; }
  echo "debootstrap $SUITE from $MIRROR (this takes a minute or two)…"
  debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -n 30 "$WORK/debootstrap.log" >&2; exit 1; }
  # No downloaders inside the sandbox, no package caches in the image.
  rm -f "$ROOT/usr/bin/curl" "$ROOT/usr/bin/wget"
  rm -rf "$ROOT/var/cache/apt/archives/"*.deb "$ROOT/var/lib/apt/lists/"* "$ROOT/var/log/"*.log
  add_sandbox_user /bin/bash
  LABEL_FLAVOUR="debootstrap-$SUITE"
fi

tar --numeric-owner -C "$ROOT" -cf "$WORK/rootfs.tar" .
cat >"$WORK/Dockerfile" <<DOCKERFILE
FROM scratch
ADD rootfs.tar /
ENV HOME=/workspace PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8
LABEL org.opencontainers.image.title="rumi-sandbox" rumi.sandbox.flavour="$LABEL_FLAVOUR"
USER 1000:1000
WORKDIR /workspace
CMD ["sleep", "infinity"]
DOCKERFILE
rm -rf "$ROOT"
docker build -q -t "$TAG" -f "$WORK/Dockerfile" "$WORK" >/dev/null
echo "built $TAG ($LABEL_FLAVOUR): $(docker image inspect -f '{{.Size}}' "$TAG") bytes"
