"""Building the sandbox image as a person sees it: Docker's build run and shown through
`BuildOutput`, and the offline recipe built by itself when Docker Hub cannot be reached.
Shared by `rumi sandbox build`, `rumi setup` and the background build job."""

from __future__ import annotations

import asyncio
import sys

from rumi.cli.build_output import BuildOutput
from rumi.sandbox.images import RecipeMissing, build_command

REGISTRY_UNREACHABLE = ("registry-1.docker.io", "no such host", "failed to resolve source "
                        "metadata", "TLS handshake timeout", "i/o timeout",
                        "connection refused", "network is unreachable")


def registry_unreachable(output: str) -> bool:
    """Docker's build output says the base image could not be fetched from the registry (no
    internet, no DNS, a firewall) rather than that the recipe failed."""
    lowered = output.lower()
    return any(marker.lower() in lowered for marker in REGISTRY_UNREACHABLE)


async def build_with_fallback(tag: str, *, offline: bool = False, minimal: bool = False,
                              base: str | None = None, fallback: bool = True,
                              verbose: bool = True) -> int:
    """Build the image; when Docker Hub cannot be reached, build the offline recipe instead
    (or, with `fallback=False`, say how to) in one line of Rumi's, rather than leaving the
    person with Docker's raw "lookup registry-1.docker.io … no such host". Without `verbose`
    only the build's steps are shown and a failure is one line (`build_output`)."""
    try:
        with build_command(tag, offline=offline, minimal=minimal, base=base) as argv:
            code, output = await _run_build(argv, verbose)
        if code == 0 or offline or minimal or not registry_unreachable(output.text):
            if code != 0 and not verbose:
                print(f"rumi: the build failed: {output.problem()} (--verbose shows Docker's "
                      "output)", file=sys.stderr)
            return code
        if not fallback:
            print("rumi: Docker Hub cannot be reached from this machine, so the base image "
                  "cannot be pulled; build without a registry instead: "
                  "`rumi sandbox build --offline` (needs root for debootstrap)",
                  file=sys.stderr)
            return code
        print("rumi: registry unreachable → building offline (debootstrap, about a minute; "
              "needs root)", file=sys.stderr)
        with build_command(tag, offline=True) as argv:
            code, output = await _run_build(argv, verbose)
        if code != 0 and not verbose:
            print(f"rumi: the offline build failed: {output.problem()}", file=sys.stderr)
        return code
    except RecipeMissing as exc:
        print(f"rumi: {exc}", file=sys.stderr)
        return 1


async def _run_build(argv: list[str], verbose: bool) -> tuple[int, BuildOutput]:
    """Run a build, printing to stderr what `BuildOutput` shows of each line as it comes."""
    output = BuildOutput(verbose=verbose)
    if verbose:
        print("+ " + " ".join(argv), file=sys.stderr)
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    except FileNotFoundError:
        print(f"rumi: {argv[0]} not found", file=sys.stderr)
        return 127, output
    assert process.stdout is not None
    async for raw in process.stdout:
        shown = output.feed(raw.decode("utf-8", "replace"))
        if shown is not None:
            sys.stderr.write(shown)
            sys.stderr.flush()
    return await process.wait(), output
