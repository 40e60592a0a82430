"""A workspace volume with a hard size and file-count limit, made through the Docker engine.

Why: Docker caps a `local` volume only on XFS with project quotas, so on ext4 (every Raspberry
Pi OS install) a chat could fill the host's disk or its inode table. Docker's local driver
refuses `o=loop` on an image file, but it mounts an ext4 *block device* and the kernel then
enforces the filesystem's size and inode table. So each chat gets:

- a store volume `rumi-wsimg-…` holding `workspace.img`, a sparse ext4 image of
  `workspace_size` (one inode per 16 KiB: 65,536 per GiB);
- a short-lived helper container (the sandbox image, run as root) that creates and
  formats the image once and attaches it to a loop device (the docker group is already
  root-equivalent, so Rumi itself never needs root);
- the workspace volume `rumi-ws-…` with `type=ext4, device=/dev/loopN`, labelled with the
  device it was made for. Loop devices do not survive a reboot and their numbers change, so
  before each container is created the helper reports the image's current device and a
  volume made for another device is recreated (it holds no data: the files live in the image).

Every function here blocks (Docker API calls): call them from a worker thread.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable
from typing import Any

from docker.errors import APIError, NotFound

log = logging.getLogger(__name__)

LIMIT_LABEL = "rumi.limit"
DEVICE_LABEL = "rumi.loopdev"
BYTES_PER_INODE = 16384
_MOUNT_ROOT = "/rumi-img"

# $1 image path, $2 size in bytes, $3 owner uid:gid. Prints the loop device backing the image.
_ATTACH = r"""
set -eu
f="$1"
if [ ! -e "$f" ]; then
  rm -f "$f.new"
  truncate -s "$2" "$f.new"
  mkfs.ext4 -q -F -m 0 -i BPI -E root_owner="$3" "$f.new"
  debugfs -w -R "rmdir lost+found" "$f.new" >/dev/null 2>&1 || true
  mv "$f.new" "$f"
fi
dev=$(losetup -j "$f" | head -n 1 | cut -d: -f1)
if [ -z "$dev" ]; then dev=$(losetup -f --show "$f"); fi
echo "$dev $(losetup -l -n -O BACK-INO,BACK-MAJ:MIN "$dev" 2>/dev/null | awk '{print $1" "$2}')"
""".replace("BPI", str(BYTES_PER_INODE))

# $1 image path: detach every loop device that backs it.
_DETACH = r"""
set -eu
for dev in $(losetup -j "$1" | cut -d: -f1); do losetup -d "$dev"; done
"""

# Arguments: pairs of a loop device and the identity (backing inode, major:minor) it had when
# this installation attached it. Each device that still backs that same file is detached; one
# still mounted is not cut: the kernel only marks it to detach itself when unmounted.
_DETACH_RECORDED = r"""
while [ "$#" -ge 2 ]; do
  now=$(losetup -l -n -O BACK-INO,BACK-MAJ:MIN "$1" 2>/dev/null | awk '{print $1" "$2}')
  if [ -n "$now" ] && [ "$now" = "$2" ]; then losetup -d "$1" 2>/dev/null && echo "$1"; fi
  shift 2
done
exit 0
"""

PROBE_SIZE = 16 * 1024 * 1024
# what to do when `probe` (or a chat's first start) finds the limit cannot be set up here
LIMIT_FIX = ("run Docker as root with loop devices (`sudo modprobe loop`; rootless Docker "
             "cannot attach them) and an image with mkfs.ext4 and losetup (`rumi sandbox "
             "build`), or set sandbox.workspace_mode = \"image\" and run Rumi as root "
             "(docs/sandbox.md, 'Disk quota by default')")


class LoopVolumeError(Exception):
    """The limited workspace could not be set up; phrased for the operator."""


def probe(client: Any, image: str, labels: dict[str, str]) -> str | None:
    """Make, mount and remove a 16 MiB limited volume, as a chat's first start would: None
    when it works, else why not (for `rumi doctor` and `rumi setup`, which never start Rumi).
    Everything it makes carries `labels` and is removed before it returns."""
    name = f"rumi-ws-probe-{uuid.uuid4().hex[:12]}"
    labels = {**labels, "rumi.chat": name}
    try:
        ensure(client, image, name, labels, PROBE_SIZE, "1000:1000")
        client.containers.run(image, ["true"], remove=True, network_mode="none",
                              labels={**labels, "rumi.role": "workspace-probe"},
                              volumes={name: {"bind": "/workspace", "mode": "rw"}})
    except LoopVolumeError as exc:
        return str(exc)
    except APIError as exc:
        return f"the limited volume does not mount: {exc.explanation}"
    finally:
        with contextlib.suppress(APIError, LoopVolumeError):
            destroy(client, image, name, labels)
        for leftover in (name, store_name(name)):  # a helper that could not even detach
            with contextlib.suppress(APIError):
                client.volumes.get(leftover).remove(force=True)
    return None


def store_name(volume_name: str) -> str:
    return volume_name.replace("rumi-ws-", "rumi-wsimg-", 1)


def is_limited(volume: Any) -> bool:
    return LIMIT_LABEL in (volume.attrs.get("Labels") or {})


Attached = Callable[[str, str], None]


def ensure(client: Any, image: str, volume_name: str, labels: dict[str, str],
           size: int, owner: str, attached: Attached | None = None) -> str:
    """Create or refresh the chat's limited workspace volume; returns its name. `attached`
    hears the loop device and its identity (backing inode, major:minor), for `detach_recorded`.

    Raises LoopVolumeError when the engine cannot do it (no privileged containers, no loop
    devices, no mkfs.ext4 in the image): the caller decides what to fall back to.
    """
    store = store_name(volume_name)
    try:
        client.volumes.get(store)
    except NotFound:
        client.volumes.create(store, labels={**labels, "rumi.role": "workspace-image"})
    said = _helper(client, image, store, labels, _ATTACH, str(size), owner).strip()
    device, _, identity = said.partition(" ")
    if attached is not None and device.startswith("/dev/loop") and identity.strip():
        attached(device, identity.strip())
    if not device.startswith("/dev/loop"):
        raise LoopVolumeError(f"the helper did not attach a loop device (it said {said!r})")
    try:
        volume = client.volumes.get(volume_name)
    except NotFound:
        volume = None
    if volume is not None and (volume.attrs.get("Labels") or {}).get(DEVICE_LABEL) == device:
        return volume_name
    if volume is not None:  # made for a device number from before a reboot: no data in it
        volume.remove(force=True)
    client.volumes.create(
        volume_name, driver="local",
        driver_opts={"type": "ext4", "device": device, "o": "nosuid,nodev"},
        labels={**labels, LIMIT_LABEL: str(size), DEVICE_LABEL: device})
    return volume_name


def destroy(client: Any, image: str, volume_name: str, labels: dict[str, str]) -> None:
    """Remove the workspace volume, detach the loop device and delete the image (files gone)."""
    with contextlib.suppress(NotFound):
        volume = client.volumes.get(volume_name)
        if _same_owner(volume, labels):
            volume.remove(force=True)
    discard_store(client, image, store_name(volume_name), labels)


def discard_store(client: Any, image: str, store: str, labels: dict[str, str]) -> None:
    """Detach the loop device of the image in volume `store`, then remove the volume."""
    try:
        volume = client.volumes.get(store)
    except NotFound:
        return
    if not _same_owner(volume, labels):
        return
    _helper(client, image, store, labels, _DETACH)
    volume.remove(force=True)


def release(client: Any, image: str, volume_name: str, labels: dict[str, str]) -> bool:
    """Detach the chat's loop device once its container is gone (an idle chat holds none; the
    next command attaches it again, `ensure`). Its files stay in the image. Whether it had a
    store to release."""
    try:
        store = client.volumes.get(store_name(volume_name))
    except NotFound:
        return False
    if not _same_owner(store, labels):
        return False
    _helper(client, image, store.name, labels, _DETACH)
    return True


def detach_recorded(client: Any, image: str, labels: dict[str, str],
                    recorded: dict[str, str]) -> list[str]:
    """Detach the loop devices this installation attached (`recorded`: device → identity) that
    still back the same file: stale ones whose image was deleted since, and those an earlier
    run left attached. A device now backing anything else — another installation's, other
    software's — is never touched. Returns the devices detached (or marked to detach)."""
    if not recorded:
        return []
    pairs = [part for device, identity in sorted(recorded.items())
             for part in (device, identity)]
    output = _helper(client, image, None, labels, _DETACH_RECORDED, *pairs, all_lines=True)
    return [line for line in output.splitlines() if line.startswith("/dev/loop")]


def _same_owner(volume: Any, labels: dict[str, str]) -> bool:
    """Only volumes this installation made are removed (same test as the manager's)."""
    theirs = volume.attrs.get("Labels") or {}
    return theirs.get("rumi.managed") == "1" and all(
        theirs.get(key) == labels.get(key) for key in ("rumi.instance", "rumi.chat")
        if key in labels)


def _helper(client: Any, image: str, store: str | None, labels: dict[str, str], script: str,
            *args: str, all_lines: bool = False) -> str:
    """Run `script` as root in a throw-away container with the store mounted (its image path
    is `$1`; without a store, `args` alone are the script's arguments).

    Not `--privileged`: only CAP_SYS_ADMIN and the loop devices (block major 7, loop-control
    10:237) through the host's /dev, where the kernel creates new loop nodes.
    """
    volumes = {"/dev": {"bind": "/dev", "mode": "rw"}}
    argv = list(args)
    if store is not None:
        volumes[store] = {"bind": f"{_MOUNT_ROOT}/{store}", "mode": "rw"}
        argv.insert(0, f"{_MOUNT_ROOT}/{store}/workspace.img")
    try:
        container = client.containers.create(
            image, ["sh", "-c", script, "rumi-loop", *argv], user="0",
            cap_add=["SYS_ADMIN"], device_cgroup_rules=["b 7:* rmw", "c 10:237 rmw"],
            environment={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            network_mode="none", labels={**labels, "rumi.role": "workspace-helper"},
            volumes=volumes)
    except APIError as exc:
        raise LoopVolumeError(f"could not start the workspace helper: {exc.explanation}") from exc
    try:
        container.start()
        status = container.wait(timeout=120)
        output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
    except APIError as exc:
        raise LoopVolumeError(f"the workspace helper failed: {exc.explanation}") from exc
    finally:
        container.remove(force=True)
    if status.get("StatusCode") != 0:
        lines = output.strip().splitlines()
        raise LoopVolumeError(
            f"the workspace helper failed: {lines[-1] if lines else status.get('StatusCode')}")
    if all_lines:
        return output.strip()
    return output.strip().splitlines()[-1] if output.strip() else ""


def remove_volumes(client: Any, image: str, volumes: list[Any]) -> None:
    """Remove workspace volumes and their stores: mounts first, then each loop device is
    detached before its image goes (a removed image with its device attached leaks it)."""
    for volume in volumes:
        if "rumi.role" not in (volume.attrs.get("Labels") or {}):
            with contextlib.suppress(NotFound):
                volume.remove(force=True)
    for volume in volumes:
        labels = volume.attrs.get("Labels") or {}
        with contextlib.suppress(NotFound):
            if labels.get("rumi.role") == "workspace-image":
                discard_store(client, image, volume.name, labels)
            volume.remove(force=True)
