"""Doctor (and `rumi setup`) tell three Docker problems apart, each with its own fix: a
stopped daemon must never be answered with "install Docker"."""

from __future__ import annotations

import socket

import pytest
from docker.errors import DockerException

import docker
from rumi.base.checks import Status
from rumi.config import SandboxSettings
from rumi.doctor.dockerhost import NO_PERMISSION, NOT_INSTALLED, STOPPED, diagnose
from rumi.doctor.services import check_docker


def _engine_error(sock: str) -> DockerException:
    """The error the real SDK raises for a socket path."""
    try:
        docker.DockerClient(base_url=f"unix://{sock}", timeout=5).version()
    except DockerException as exc:
        return exc
    raise AssertionError("an engine answered")


def test_no_client_and_no_socket_is_not_installed(tmp_path):
    sock = tmp_path / "docker.sock"
    problem = diagnose(_engine_error(str(sock)), {"DOCKER_HOST": f"unix://{sock}"}, which="")
    assert problem.kind == NOT_INSTALLED
    assert "get.docker.com" in problem.fix


def test_client_without_daemon_is_a_stopped_daemon(tmp_path):
    sock = tmp_path / "docker.sock"
    problem = diagnose(_engine_error(str(sock)), {"DOCKER_HOST": f"unix://{sock}"},
                       which="/usr/bin/docker")
    assert problem.kind == STOPPED
    assert "systemctl" in problem.fix and "get.docker.com" not in problem.fix


def test_a_socket_nobody_listens_on_is_a_stopped_daemon(tmp_path):
    sock = tmp_path / "docker.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    server.close()  # the file stays, nothing listens: what a crashed dockerd leaves
    problem = diagnose(_engine_error(str(sock)), {"DOCKER_HOST": f"unix://{sock}"},
                       which="/usr/bin/docker")
    assert problem.kind == STOPPED


def test_permission_denied_is_the_docker_group():
    error = DockerException("Error while fetching server API version: ('Connection aborted.', "
                            "PermissionError(13, 'Permission denied'))")
    problem = diagnose(error, {}, which="/usr/bin/docker")
    assert problem.kind == NO_PERMISSION
    assert "usermod -aG docker" in problem.fix and "get.docker.com" not in problem.fix


@pytest.mark.parametrize("sandbox_enabled", [True, False])
async def test_doctor_names_the_case(tmp_path, sandbox_enabled):
    sock = tmp_path / "docker.sock"
    env = {"DOCKER_HOST": f"unix://{sock}"}
    result = await check_docker(SandboxSettings(enabled=sandbox_enabled),
                                factory=lambda: docker.from_env(environment=env, timeout=5),
                                env=env)
    if sandbox_enabled:
        assert result.status is Status.FAIL
        assert any(kind in result.detail for kind in (STOPPED, NOT_INSTALLED))
    else:
        assert result.status is Status.OK
