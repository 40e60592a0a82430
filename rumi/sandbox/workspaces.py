"""Where each chat's /workspace lives, by `sandbox.workspace_mode`: a size-limited volume on a
loop device (`volume`, the default), a loop-mounted image on the host (`image`), or a host
directory (`bind`); made on first use, migrated from older shapes, removed on request.

Every method blocks (Docker API calls, mount): the manager calls them from a worker thread.
Only volumes labelled as this installation's are ever reused or removed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import threading
from pathlib import Path
from typing import Any

from docker.errors import APIError, NotFound

import docker
from rumi.config import SandboxSettings
from rumi.fileio import atomic_write_text
from rumi.sandbox import diskimage, loopvolume
from rumi.sandbox.diskimage import DiskImageError
from rumi.sandbox.errors import SandboxError, short
from rumi.sandbox.loopvolume import LoopVolumeError
from rumi.sandbox.policy import Identity, parse_size

log = logging.getLogger(__name__)


class Workspaces:
    """The chats' workspaces of one installation (`instance`) under `data_dir`."""

    def __init__(self, settings: SandboxSettings, data_dir: Path, instance: str) -> None:
        self.settings = settings
        self.data_dir = data_dir
        self.instance = instance
        self.limit_problem: str | None = None  # why workspaces cannot be limited, for doctor
        self._limited_ok = True
        self._warned_no_quota = False
        self._records_path = data_dir / "sandbox-loops.json"
        self._records_lock = threading.Lock()

    def is_ours(self, labels: dict[str, str] | None) -> bool:
        """Whether a container or volume was made by this installation: the one test used
        before anything is reused or removed, so a same-named resource of another Rumi (or of
        anything else) on a shared engine is never touched."""
        labels = labels or {}
        return labels.get("rumi.managed") == "1" and labels.get("rumi.instance") == self.instance

    def chat_dir(self, ident: Identity) -> Path:
        return self.data_dir / "chats" / ident.chat_id

    def source(self, client: docker.DockerClient, ident: Identity) -> str:
        """What to mount on /workspace: a host path (image, bind) or a volume name."""
        mode = self.settings.workspace_mode
        if mode == "image":
            return self._image_source(client, ident)
        if mode == "bind":
            path = self.chat_dir(ident) / "workspace"
            path.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(PermissionError):
                os.chown(path, 1000, 1000)
            return str(path.resolve())
        return self._volume_source(client, ident)

    def _image_source(self, client: docker.DockerClient, ident: Identity) -> str:
        legacy = (self.our_volume(client, ident.volume_name)
                  or self.our_volume(client, ident.legacy_volume_name))
        legacy_dir = Path(legacy.attrs["Mountpoint"]) if legacy is not None else None
        try:
            with contextlib.ExitStack() as stack:
                if legacy is not None and loopvolume.is_limited(legacy):
                    store = self.our_volume(client, loopvolume.store_name(legacy.name))
                    legacy_dir = None if store is None else stack.enter_context(
                        diskimage.mounted_readonly(
                            Path(store.attrs["Mountpoint"]) / "workspace.img",
                            self.chat_dir(ident) / "workspace.old"))
                path = diskimage.ensure_mounted(
                    self.chat_dir(ident), self._size(), self.settings.user, legacy_dir)
        except (DiskImageError, OSError) as exc:
            log.warning("workspace image of chat %s: %s", ident.chat_id, exc)
            raise SandboxError(
                "This chat's workspace could not be mounted (the operator's log says why); "
                "commands cannot run until it is fixed."
            ) from exc
        return str(path.resolve())

    def _volume_source(self, client: docker.DockerClient, ident: Identity) -> str:
        volume = self._existing_volume(client, ident.volume_name)
        if volume is None and (legacy := self.our_volume(client, ident.legacy_volume_name)):
            return str(legacy.name)  # an upgrade: the workspace keeps its pre-instance name
        if volume is not None and not loopvolume.is_limited(volume):
            log.warning("workspace of chat %s predates the size limit and keeps its files "
                        "without one; /reset with the workspace gives it a limited one",
                        ident.chat_id)
            return ident.volume_name
        labels = _volume_labels(ident)
        has_image = self.our_volume(client, loopvolume.store_name(ident.volume_name)) is not None
        if self._limited_ok or has_image:
            try:
                return loopvolume.ensure(client, self.settings.image, ident.volume_name,
                                         labels, self._size(), self.settings.user,
                                         self._record_device)
            except LoopVolumeError as exc:
                if has_image:  # its files live in the image: never hand it an empty workspace
                    raise SandboxError(
                        "This chat's /workspace is a disk image that cannot be attached right "
                        f"now ({exc}); its files are kept in it. `rumi doctor` says what to "
                        "fix.") from exc
                self._limited_ok = False
                self.limit_problem = str(exc)
                log.warning("the workspace size limit cannot be set up here (%s); new "
                            "workspaces are plain volumes without a hard limit", exc)
        if volume is None:
            self._create_plain_volume(client, ident.volume_name, labels)
        return ident.volume_name

    def _create_plain_volume(self, client: docker.DockerClient, name: str,
                             labels: dict[str, str]) -> None:
        try:  # a hard cap needs the local driver on xfs with pquota; most hosts lack it
            client.volumes.create(name, labels=labels,
                                  driver_opts={"size": self.settings.workspace_size})
        except APIError as exc:
            if "quota" not in str(exc).lower():
                raise
            if not self._warned_no_quota:
                log.info("Docker cannot cap volume sizes here (%s); /workspace is limited "
                         "by the write_file quota and the fsize ulimit (workspace_mode = "
                         "\"image\" is a hard cap)", short(exc))
                self._warned_no_quota = True
            client.volumes.create(name, labels=labels)

    def _size(self) -> int:
        return parse_size(self.settings.workspace_size, "workspace_size")

    def _existing_volume(self, client: docker.DockerClient, name: str) -> Any:
        """The named volume if it exists and is ours; a foreign one with our name is refused."""
        try:
            volume = client.volumes.get(name)
        except NotFound:
            return None
        if not self.is_ours(volume.attrs.get("Labels")):
            raise SandboxError(
                f"A volume named {name} already exists and was not created by this Rumi; this "
                "chat's sandbox will not use it. The operator must remove or rename it."
            )
        return volume

    def our_volume(self, client: docker.DockerClient, name: str) -> Any:
        """The named volume only if this installation made it (never raises for foreign ones)."""
        try:
            volume = client.volumes.get(name)
        except NotFound:
            return None
        return volume if self.is_ours(volume.attrs.get("Labels")) else None

    def remove(self, client: docker.DockerClient, ident: Identity) -> None:
        """Delete the chat's workspace, its files with it (its container is gone already)."""
        mode = self.settings.workspace_mode
        if mode == "image":
            try:
                diskimage.destroy(self.chat_dir(ident))
            except DiskImageError as exc:
                raise SandboxError(f"The workspace could not be removed: {exc}") from exc
        elif mode == "bind":
            shutil.rmtree(self.chat_dir(ident) / "workspace", ignore_errors=True)
        if mode == "bind":
            return
        try:  # a limited volume, or one image mode copied from
            loopvolume.destroy(client, self.settings.image, ident.volume_name,
                               _volume_labels(ident))
        except LoopVolumeError as exc:
            raise SandboxError(f"The workspace could not be removed: {exc}") from exc
        for name in (ident.volume_name, ident.legacy_volume_name):  # an old, copied volume
            volume = self.our_volume(client, name)
            if volume is not None:
                volume.remove(force=True)

    def release(self, client: docker.DockerClient, ident: Identity) -> None:
        """The chat's container is gone: in `volume` mode detach its loop device, so an idle
        chat holds none (the next command attaches it again; the files stay in the image)."""
        if self.settings.workspace_mode != "volume":
            return
        try:
            loopvolume.release(client, self.settings.image, ident.volume_name,
                               _volume_labels(ident))
        except LoopVolumeError as exc:
            log.info("loop device of chat %s stays attached: %s", ident.chat_id, exc)

    def _record_device(self, device: str, identity: str) -> None:
        """Remember a loop device this installation attached (data_dir/sandbox-loops.json)."""
        with self._records_lock:
            records = self._records()
            if records.get(device) == identity:
                return
            records[device] = identity
            try:
                atomic_write_text(self._records_path, json.dumps(records, sort_keys=True))
            except OSError as exc:  # only a later start's cleanup misses it
                log.info("could not record loop device %s: %s", device, exc)

    def _records(self) -> dict[str, str]:
        try:
            data = json.loads(self._records_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def detach_stale(self, client: docker.DockerClient) -> list[str]:
        """At start, in `volume` mode: detach the loop devices this installation attached and
        left (images deleted since, or chats of an earlier run), each only while it still backs
        the file it was attached to. Others' devices are never touched."""
        if self.settings.workspace_mode != "volume":
            return []
        with self._records_lock:
            records = self._records()
        if not records:
            return []
        labels = {"rumi.managed": "1", "rumi.instance": self.instance}
        try:
            detached = loopvolume.detach_recorded(client, self.settings.image, labels, records)
        except LoopVolumeError as exc:
            log.info("could not look for stale loop devices: %s", exc)
            return []
        with self._records_lock:
            self._records_path.unlink(missing_ok=True)  # the next attach records afresh
        return detached

    def orphaned_images(self, client: docker.DockerClient) -> list[str]:
        """Image stores (`rumi-wsimg-…`) of this installation whose workspace volume is gone:
        nothing mounts them again, they only hold disk (and maybe a loop device)."""
        filters = {"label": ["rumi.managed=1", f"rumi.instance={self.instance}",
                             "rumi.role=workspace-image"]}
        names = {str(v.name) for v in client.volumes.list(
            filters={"label": ["rumi.managed=1", f"rumi.instance={self.instance}"]})}
        return sorted(str(v.name) for v in client.volumes.list(filters=filters)
                      if self.is_ours(v.attrs.get("Labels"))
                      and str(v.name).replace("rumi-wsimg-", "rumi-ws-", 1) not in names)

    def remove_image_store(self, client: docker.DockerClient, name: str) -> bool:
        """Delete one orphaned image store (its loop device detached first)."""
        volume = self.our_volume(client, name)
        if volume is None:
            return False
        try:
            loopvolume.discard_store(client, self.settings.image, name,
                                     {"rumi.managed": "1", "rumi.instance": self.instance})
        except LoopVolumeError as exc:
            log.warning("workspace image %s not removed: %s", name, exc)
            return False
        return True

    def list_names(self, client: docker.DockerClient) -> list[str]:
        """Names of this installation's workspace volumes (not their image stores)."""
        filters = {"label": ["rumi.managed=1", f"rumi.instance={self.instance}"]}
        volumes = client.volumes.list(filters=filters)
        return sorted(str(v.name) for v in volumes if self.is_ours(v.attrs.get("Labels"))
                      and "rumi.role" not in (v.attrs.get("Labels") or {}))

    def remove_volume(self, client: docker.DockerClient, name: str) -> bool:
        """Delete one workspace volume (and its image if limited); False when it is gone or
        foreign. APIError (still mounted) is the caller's to phrase."""
        volume = self.our_volume(client, name)
        if volume is None:
            return False
        volume.remove(force=False)
        if loopvolume.is_limited(volume):  # its files live in the image: drop that too
            labels = {"rumi.managed": "1", "rumi.instance": self.instance}
            try:
                loopvolume.destroy(client, self.settings.image, name, labels)
            except LoopVolumeError as exc:
                log.warning("workspace volume %s removed but not its image: %s", name, exc)
        return True

    def unmount_images(self) -> list[str]:
        """`image` mode, at stop: unmount every chat's workspace image (the loop device is
        released with it), so nothing stays mounted or attached after Rumi exits. Files stay
        in the image; the next start mounts it again. Returns the chats unmounted."""
        if self.settings.workspace_mode != "image":
            return []
        done = []
        for mountpoint in sorted((self.data_dir / "chats").glob("*/workspace")):
            if not os.path.ismount(mountpoint):
                continue
            try:
                diskimage.unmount(mountpoint)
            except DiskImageError as exc:
                log.warning("workspace of chat %s stays mounted: %s", mountpoint.parent.name, exc)
                continue
            done.append(mountpoint.parent.name)
        return done


def _volume_labels(ident: Identity) -> dict[str, str]:
    """A workspace outlives versions: its labels leave the version out."""
    return {k: v for k, v in ident.labels.items() if k != "rumi.version"}
