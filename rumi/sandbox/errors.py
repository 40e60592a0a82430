"""What can go wrong with the sandbox, as the manager and its parts report it.

Its own module so the parts (engine link, workspaces, containers) raise the same errors the
manager's callers catch, without importing the manager.
"""

from __future__ import annotations

import requests
from docker.errors import DockerException

ENGINE_ERRORS = (DockerException, requests.RequestException, OSError)

# Why the sandbox is unavailable, as a kind the chat can phrase in its own language
# (`last_problem`); the English `reason` next to it is for logs, doctor and the CLI.
PROBLEM_DISABLED = "disabled"
PROBLEM_ENGINE = "engine"
PROBLEM_IMAGE = "image"


class SandboxError(Exception):
    """A sandbox failure phrased for the model/user (never a traceback)."""


class SandboxUnavailable(SandboxError):
    """The Docker engine (or the image) cannot be used right now."""


def short(exc: BaseException) -> str:
    """The first line of an engine error, bounded: enough for a log line or a reason."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:160]
