"""Rumi speaks for Docker: what a build shows of Docker's lines (the real text Docker 27's legacy
builder printed on a host without a registry, from issue 27)."""

from __future__ import annotations

from rumi.cli.build_output import BuildOutput

OFFLINE_HOST = [
    "DEPRECATED: The legacy builder is deprecated and will be removed in a future release.\n",
    "            Install the buildx component to build images with BuildKit:\n",
    "            https://docs.docker.com/go/buildx/\n",
    "\n",
    "Sending build context to Docker daemon  2.048kB\n",
    "Step 1/9 : FROM debian:bookworm-slim\n",
    'Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on '
    "10.255.255.53:53: no such host\n",
]


def shown(output: BuildOutput) -> str:
    return "".join(text for line in OFFLINE_HOST if (text := output.feed(line)) is not None)


def test_quiet_shows_the_steps_only() -> None:
    output = BuildOutput(verbose=False)
    assert shown(output) == "   Step 1/9 : FROM debian:bookworm-slim\n"
    assert "no such host" in output.text  # kept for the diagnosis (registry_unreachable)
    assert output.problem().startswith('Get "https://registry-1.docker.io/v2/"')


def test_verbose_shows_docker_but_not_its_deprecation_notice() -> None:
    text = shown(BuildOutput(verbose=True))
    assert "no such host" in text and "Sending build context" in text
    assert "DEPRECATED" not in text and "buildx" not in text


def test_buildkit_steps_are_shown_and_long_ones_cut() -> None:
    output = BuildOutput(verbose=False)
    line = "#6 [2/9] RUN apt-get update && apt-get install -y " + "pkg " * 40 + "\n"
    text = output.feed(line)
    assert text is not None and text.startswith("   #6 [2/9] RUN apt-get") and len(text) < 110
    assert output.feed("#6 0.512 Get:1 http://deb.debian.org bookworm InRelease\n") is None
