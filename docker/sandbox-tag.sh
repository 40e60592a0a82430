#!/usr/bin/env bash
# Print this checkout's default sandbox image tag, rumi-sandbox:<version>-<recipe hash>, the
# same as `sandbox.image`'s default in Rumi (rumi/image_tag.py), for hosts that build the image
# without Python (Docker Compose: the bot image has no docker CLI):
#   docker build -t "$(bash docker/sandbox-tag.sh)" -f docker/sandbox.Dockerfile docker/
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$REPO/rumi/__init__.py")"
hash="$(cat "$REPO/docker/sandbox.Dockerfile" "$REPO/docker/build-offline-sandbox.sh" \
        | sha256sum | cut -c1-8)"
echo "rumi-sandbox:${version//+/_}-${hash}"
