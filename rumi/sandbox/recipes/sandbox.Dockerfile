# Rumi's per-chat sandbox image: Debian bookworm-slim + bash, coreutils, python3, git, procps.
#
#   rumi sandbox build                                   # native arch (a Pi 4 builds arm64)
#   docker buildx build --platform linux/amd64,linux/arm64 -f docker/sandbox.Dockerfile \
#       -t rumi-sandbox:latest docker/                   # multi-arch, for a registry
#
# No arch-specific steps, so the same file builds on amd64 and arm64. Without a registry, use
# docker/build-offline-sandbox.sh (same contents from a debootstrap root filesystem).
# BASE lets an offline host start from a local Debian bookworm image instead of Docker Hub.
ARG BASE=debian:bookworm-slim
FROM ${BASE}

RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends bash coreutils python3 git procps; \
    apt-get purge -y --auto-remove curl wget || true; \
    rm -f /usr/bin/curl /usr/bin/wget; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb; \
    groupadd --gid 1000 sandbox; \
    useradd --uid 1000 --gid 1000 --home-dir /workspace --no-create-home \
        --shell /bin/bash sandbox; \
    mkdir -p /workspace; \
    chown 1000:1000 /workspace; \
    chmod 0755 /workspace

# A fresh named volume mounted on /workspace copies this directory's owner (uid 1000).
ENV HOME=/workspace LANG=C.UTF-8
LABEL org.opencontainers.image.title="rumi-sandbox" rumi.sandbox.flavour="dockerfile-bookworm-slim"
USER 1000:1000
WORKDIR /workspace
CMD ["sleep", "infinity"]
