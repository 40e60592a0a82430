"""What a person sees of a sandbox image build: Rumi speaks for Docker.

Docker's raw daemon text (`Get "https://registry-1.docker.io/v2/": … no such host`) and the
legacy builder's deprecation notice tell a newcomer nothing they can act on, so by default
only the build's step headers are shown and a failure is summed up in one line; `--verbose`
shows Docker's output as it comes (still without the deprecation notice, printed on every
build by an engine without buildx and never about Rumi).
"""

from __future__ import annotations

import re

LEGACY_NOTICE = "DEPRECATED: The legacy builder is deprecated"
# "Step 2/9 : RUN …" (legacy builder) and "#5 [2/9] RUN …" (BuildKit)
STEP = re.compile(r"^(Step \d+/\d+ : |#\d+ \[[^\]]*\d+/\d+\] )")
PROBLEM_MARKERS = ("error", "returned a non-zero code", "no such host", "failed", "denied")
STEP_WIDTH = 100


class BuildOutput:
    """Fed Docker's lines one by one; says which to show and keeps the tail for diagnosis."""

    def __init__(self, *, verbose: bool, keep: int = 200) -> None:
        self.verbose = verbose
        self.keep = keep
        self.tail: list[str] = []
        self._in_notice = False

    def feed(self, line: str) -> str | None:
        """The text to print for this line, or None."""
        self.tail = [*self.tail[-(self.keep - 1):], line]
        if line.startswith(LEGACY_NOTICE):
            self._in_notice = True
            return None
        if self._in_notice:  # the notice's indented lines, up to the blank line after it
            self._in_notice = bool(line.strip())
            return None
        if self.verbose:
            return line
        if STEP.match(line):
            step = line.strip()
            return f"   {step if len(step) <= STEP_WIDTH else step[:STEP_WIDTH - 1] + '…'}\n"
        return None

    @property
    def text(self) -> str:
        return "".join(self.tail)

    def problem(self) -> str:
        """One line saying why the build failed: the last line that looks like the reason."""
        lines = [line.strip() for line in self.tail if line.strip()]
        for line in reversed(lines):
            if any(marker in line.lower() for marker in PROBLEM_MARKERS):
                return line[:200]
        return lines[-1][:200] if lines else "no output"
