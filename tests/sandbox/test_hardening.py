"""Every hardening default is visible in `docker inspect`, and unsafe settings are refused."""

from __future__ import annotations

import contextlib
import io
import socket
import uuid

import pytest
from docker.errors import ImageNotFound, NotFound

from rumi.config import ConfigError, SandboxSettings
from rumi.sandbox.manager import SandboxManager
from rumi.sandbox.policy import UnsafeSandboxConfig, parse_size
from tests.conftest import SANDBOX_TEST_IMAGE

pytestmark = pytest.mark.docker


async def test_hardening_defaults_in_docker_inspect(manager, chat_ids, docker_client):
    chat = chat_ids()
    await manager.exec(chat, "true")
    attrs = docker_client.containers.get(manager.identity(chat).container_name).attrs
    host, config = attrs["HostConfig"], attrs["Config"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert not host["CapAdd"]
    assert host["Privileged"] is False
    assert "no-new-privileges" in host["SecurityOpt"]
    assert config["User"] == "1000:1000"
    assert host["PidsLimit"] == 128
    assert host["Memory"] == 512 * 1024 * 1024
    assert host["MemorySwap"] == 512 * 1024 * 1024
    assert host["NanoCpus"] == 1_000_000_000
    assert host["Tmpfs"]["/tmp"] == f"rw,nosuid,nodev,size={64 * 1024 * 1024},nr_inodes=16384"
    assert host["Init"] is True
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in host["Ulimits"]}
    assert ulimits["nofile"] == (1024, 1024)
    assert ulimits["fsize"] == (512 * 1024 * 1024,) * 2
    assert not host.get("Binds")
    mounts = [(m["Type"], m["Name"], m["Destination"], m["RW"]) for m in attrs["Mounts"]]
    assert mounts == [("volume", manager.identity(chat).volume_name, "/workspace", True)]
    labels = config["Labels"]
    assert labels["rumi.chat"] == chat
    assert labels["rumi.managed"] == "1"
    assert labels["rumi.version"]
    assert labels["rumi.instance"] == manager.instance
    inside = await manager.exec(chat, "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status")
    assert inside.stdout.split() == ["CapEff:", "0000000000000000", "NoNewPrivs:", "1"]


async def test_changed_settings_recreate_the_container(
    make_manager, sandbox_settings, chat_ids, docker_client
):
    chat = chat_ids()
    first = make_manager()
    await first.exec(chat, "echo data > f")
    name = first.identity(chat).container_name  # same data_dir: same instance, same name
    old_id = docker_client.containers.get(name).id
    second = make_manager(settings=sandbox_settings(pids_limit=64))
    result = await second.exec(chat, "cat f")
    assert result.stdout == "data\n"
    container = docker_client.containers.get(name)
    assert container.id != old_id
    assert container.attrs["HostConfig"]["PidsLimit"] == 64


@pytest.mark.parametrize(
    ("overrides", "names"),
    [
        ({"network_mode": "host"}, "sandbox.network_mode"),
        ({"network_mode": "container:abc"}, "sandbox.network_mode"),
        ({"privileged": True}, "sandbox.privileged"),
        ({"user": "root"}, "sandbox.user"),
        ({"user": "0:0"}, "sandbox.user"),
        ({"user": "00"}, "sandbox.user"),  # runc reads every all-digit spelling as uid 0
        ({"user": "0000:1000"}, "sandbox.user"),
        ({"user": " 0 "}, "sandbox.user"),
        # a directory that contains the Docker socket hands it over as much as the socket does
        ({"extra_volumes": ["/var/run:/x:ro"]}, "extra_volumes"),
        ({"extra_volumes": ["/run:/x"]}, "extra_volumes"),
        ({"extra_volumes": ["/var:/x:ro"]}, "extra_volumes"),
        ({"extra_volumes": ["/var/lib/docker:/x"]}, "extra_volumes"),
        ({"extra_volumes": ["/var/lib/docker/volumes:/x:ro"]}, "extra_volumes"),
        ({"extra_volumes": ["/run/containerd:/x"]}, "extra_volumes"),
        ({"extra_volumes": ["/home/u/.docker/run/docker.sock:/d.sock"]}, "extra_volumes"),
        ({"extra_volumes": ["/var/run/docker.sock:/var/run/docker.sock"]}, "extra_volumes"),
        ({"extra_volumes": ["/run/docker.sock:/d.sock:ro"]}, "extra_volumes"),
        ({"extra_volumes": ["/:/host:ro"]}, "extra_volumes"),
        ({"extra_volumes": ["//:/host"]}, "extra_volumes"),
        ({"extra_volumes": ["/srv/data:/workspace"]}, "extra_volumes"),
        ({"extra_volumes": ["nonsense"]}, "extra_volumes"),
        ({"memory": "lots"}, "sandbox.memory"),
    ],
)
def test_unsafe_settings_are_refused(tmp_path, overrides, names):
    settings = SandboxSettings(**overrides)
    with pytest.raises(UnsafeSandboxConfig) as caught:
        SandboxManager(settings, tmp_path)
    assert names in str(caught.value)
    assert isinstance(caught.value, ConfigError)  # `rumi run` ends with one line, exit 2


def test_safe_extra_volumes_are_accepted(tmp_path):
    """The refusals above are about what is mounted, not about extra volumes as such."""
    settings = SandboxSettings(extra_volumes=["/srv/data:/data:ro", "datasets:/datasets",
                                              f"{tmp_path}:/x"], user="1000:0")
    SandboxManager(settings, tmp_path)


def test_docker_host_socket_directory_is_refused(tmp_path, monkeypatch):
    """The socket the engine is really reached through (DOCKER_HOST) is protected too."""
    engine_dir = tmp_path / "engine"
    settings = SandboxSettings(extra_volumes=[f"{engine_dir}:/x:ro"])
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    SandboxManager(settings, tmp_path)  # control: an ordinary directory
    monkeypatch.setenv("DOCKER_HOST", f"unix://{engine_dir}/docker-api.sock")
    with pytest.raises(UnsafeSandboxConfig, match="docker-api.sock"):
        SandboxManager(settings, tmp_path)


def test_symlinks_and_sockets_are_judged_by_what_they_point_to(tmp_path):
    """A harmless-looking path that resolves to the socket (or to a directory holding it), or
    any unix socket at all, is refused."""
    (tmp_path / "runlink").symlink_to("/run")
    (tmp_path / "socklink").symlink_to("/var/run/docker.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(tmp_path / "some.sock"))
        for source in ("runlink", "socklink", "some.sock"):
            settings = SandboxSettings(extra_volumes=[f"{tmp_path / source}:/x:ro"])
            with pytest.raises(UnsafeSandboxConfig, match="extra_volumes"):
                SandboxManager(settings, tmp_path)
    finally:
        listener.close()


def test_parse_size():
    assert parse_size("512m", "memory") == 512 * 1024**2
    assert parse_size("1g", "x") == 1024**3
    assert parse_size("64MiB", "x") == 64 * 1024**2
    with pytest.raises(UnsafeSandboxConfig):
        parse_size("0", "x")



async def test_rebuilt_image_recreates_the_container(make_manager, sandbox_settings, chat_ids,
                                                     docker_client):
    tag = f"rumi-sandbox:rebuild-{uuid.uuid4().hex[:8]}"

    def build(version: str) -> str:
        recipe = f"FROM {SANDBOX_TEST_IMAGE}\nLABEL rumi.test.version={version}\n"
        # rm/forcerm: the legacy builder otherwise leaves one stopped container per step
        image, _ = docker_client.images.build(fileobj=io.BytesIO(recipe.encode()), tag=tag,
                                              rm=True, forcerm=True)
        return image.id

    chat = chat_ids()
    built: list[str] = []
    try:
        first_image = build("1")
        built.append(first_image)
        manager = make_manager(settings=sandbox_settings(image=tag))
        await manager.exec(chat, "echo kept > f")
        first = docker_client.containers.get(manager.identity(chat).container_name)
        assert first.attrs["Image"] == first_image

        same = make_manager(settings=sandbox_settings(image=tag))  # e.g. Rumi restarted
        await same.exec(chat, "true")
        assert docker_client.containers.get(manager.identity(chat).container_name).id == first.id

        second_image = build("2")  # `rumi sandbox build` again: same tag, new image
        built.append(second_image)
        rebuilt = make_manager(settings=sandbox_settings(image=tag))
        assert (await rebuilt.exec(chat, "cat f")).stdout == "kept\n"
        second = docker_client.containers.get(manager.identity(chat).container_name)
        assert second.id != first.id and second.attrs["Image"] == second_image
    finally:
        for container in docker_client.containers.list(
                all=True, filters={"label": f"rumi.chat={chat}"}):
            with contextlib.suppress(NotFound):
                container.remove(force=True)
        for image_id in [tag, *built]:
            with contextlib.suppress(ImageNotFound):
                docker_client.images.remove(image_id, force=True)
