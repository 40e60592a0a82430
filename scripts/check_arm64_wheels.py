#!/usr/bin/env python3
"""Prove that `pip install rumi` on a Raspberry Pi 4 (64-bit OS, CPython 3.11) needs no compiler.

Resolves every runtime dependency in pyproject.toml, with all transitive dependencies, as
binary wheels for linux/aarch64 using pip's cross-platform resolver (`--only-binary=:all:
--platform manylinux…_aarch64 --python-version 3.11 --implementation cp`). Wheels are not
downloaded when the index serves their metadata (PEP 658); the resolution is the same one
`pip install` makes on the Pi.

If something has no aarch64 wheel, the script fetches its sdist: native sources in it (C, C++,
Cython, Rust, ...) fail the check at once, naming the package that would need compiling on the
Pi; otherwise it is built here, and a pure-Python result (py3-none-any) is reported as
"sdist-only, pure Python" (pip builds it on the Pi without a compiler) and resolution goes on.

    python scripts/check_arm64_wheels.py [--glibc 2.36] [--extra NAME] [--json]

Exit 0: everything installs from wheels. Exit 1: a package would need compiling (named).
Exit 2: the check itself could not run (no network to the index, bad pyproject).
Environment markers are evaluated for the machine running the check (a pip limitation), so
run it with Python 3.11.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import ssl
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

try:
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.utils import InvalidSdistFilename, canonicalize_name, parse_sdist_filename
    from packaging.version import InvalidVersion, Version
except ImportError:  # a bare interpreter: pip always carries a copy
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.specifiers import SpecifierSet
    from pip._vendor.packaging.utils import (
        InvalidSdistFilename,
        canonicalize_name,
        parse_sdist_filename,
    )
    from pip._vendor.packaging.version import InvalidVersion, Version

REPO = Path(__file__).resolve().parent.parent
NOT_FOUND = re.compile(
    r"(?:No matching distribution found for|Could not find a version that satisfies the "
    r"requirement) ([A-Za-z0-9_.\-]+)"
)
MAX_PURE_FALLBACKS = 10
DEFAULT_INDEX = "https://pypi.org/simple"


@dataclass
class Outcome:
    ok: bool
    target: str
    packages: dict[str, str] = field(default_factory=dict)  # name -> wheel file
    pure_sdists: list[str] = field(default_factory=list)
    blocked_by: str | None = None
    error: str | None = None


def runtime_dependencies(pyproject: Path, extras: list[str]) -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    deps = list(project.get("dependencies", []))
    for extra in extras:
        deps += project.get("optional-dependencies", {}).get(extra, [])
    return deps


def platforms(glibc_minor: int) -> list[str]:
    """Every manylinux tag a glibc 2.<minor> aarch64 system accepts (pip does not expand)."""
    tags = ["manylinux2014_aarch64"]
    tags += [f"manylinux_2_{m}_aarch64" for m in range(17, glibc_minor + 1)]
    return tags


def pip_env() -> dict[str, str]:
    """Resolve against the real index only: no local wheel dirs or extra indexes from config
    (they could hide a missing aarch64 wheel). PIP_CERT and proxies are kept."""
    env = dict(os.environ)
    env["PIP_CONFIG_FILE"] = os.devnull
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
        env.pop(name, None)
    return env


def pip(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True,
                          env=pip_env(), cwd=cwd, check=False)


def resolve(deps: list[str], plats: list[str], work: Path, links: Path,
            index_url: str | None) -> subprocess.CompletedProcess[str]:
    report = work / "report.json"
    args = ["install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report),
            "--target", str(work / "target"), "--only-binary=:all:",
            "--python-version", "3.11", "--implementation", "cp",
            "--abi", "cp311", "--abi", "abi3", "--abi", "none", "--find-links", str(links)]
    for plat in plats:
        args += ["--platform", plat]
    if index_url:
        args += ["--index-url", index_url]
    return pip(*args, *deps)


NATIVE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".pyx", ".f", ".f90", ".rs", ".go")
NATIVE_FILES = ("Cargo.toml", "CMakeLists.txt", "meson.build")


def native_sources(sdist: Path) -> list[str]:
    """Files in an sdist that mean a compiler (C/C++/Cython/Fortran/Rust/Go sources)."""
    if sdist.suffix == ".zip":
        with zipfile.ZipFile(sdist) as archive:
            names = archive.namelist()
    else:
        with tarfile.open(sdist) as archive:
            names = archive.getnames()
    return [n for n in names
            if n.endswith(NATIVE_SUFFIXES) or n.rsplit("/", 1)[-1] in NATIVE_FILES]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def _open(url: str) -> bytes:
    context = ssl.create_default_context(cafile=os.environ.get("PIP_CERT") or None)
    with urllib.request.urlopen(url, timeout=60, context=context) as response:  # noqa: S310
        return response.read()


def fetch_sdist(name: str, spec: SpecifierSet, index_url: str, dest: Path) -> Path | None:
    """The newest sdist of `name` allowed by `spec`, straight from the (PEP 503) index page,
    without running any of its build code."""
    base = index_url.rstrip("/") + f"/{canonicalize_name(name)}/"
    if base.startswith("file://"):
        base += "index.html"
    parser = _Links()
    try:
        page = _open(base)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, FileNotFoundError):
            return None
        raise
    parser.feed(page.decode("utf-8", errors="replace"))
    candidates: list[tuple[Version, str, str]] = []
    for href in parser.hrefs:
        url = urllib.parse.urljoin(base, href).split("#", 1)[0]
        filename = urllib.parse.unquote(url.rsplit("/", 1)[-1])
        if not filename.endswith((".tar.gz", ".zip")):
            continue
        try:
            _, version = parse_sdist_filename(filename)
        except (InvalidSdistFilename, InvalidVersion):
            continue
        if spec.contains(version, prereleases=False):
            candidates.append((version, filename, url))
    if not candidates:
        return None
    _, filename, url = max(candidates)
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / filename
    target.write_bytes(_open(url))
    return target


def build_from_sdist(name: str, spec: SpecifierSet, work: Path, links: Path,
                     index_url: str) -> str:
    """Fail fast if `name`'s sdist carries native sources, else build it here.

    Returns the built wheel's file name; a pure one is put in `links` so the resolution can
    go on (its own dependencies are then resolved as wheels too).
    """
    try:
        sdist = fetch_sdist(name, spec, index_url, work / "sdists" / name)
    except OSError as exc:
        raise RuntimeError(f"{name}: no wheel for aarch64, and its sdist could not be "
                           f"fetched ({exc})") from exc
    if sdist is None:
        raise RuntimeError(f"{name}: no wheel for aarch64 and no sdist either")
    native = native_sources(sdist)
    if native:
        raise RuntimeError(f"{name} has no aarch64 wheel and its sdist has native sources "
                           f"({', '.join(native[:3])}): it would need compiling on the Pi")
    built_dir = work / "built" / name
    built = pip("wheel", "--no-deps", "-w", str(built_dir), "--index-url", index_url,
                str(sdist))
    if built.returncode != 0:
        tail = built.stderr.strip().splitlines()[-3:]
        raise RuntimeError(f"{name}: no aarch64 wheel; building its sdist failed here too: "
                           + " / ".join(tail))
    [wheel] = list(built_dir.glob("*.whl"))
    if wheel.name.endswith("-none-any.whl"):
        wheel.rename(links / wheel.name)
    return wheel.name


def specifier_for(name: str, deps: list[str]) -> SpecifierSet:
    """The version range a direct dependency asks for (transitive ones: any version)."""
    for dep in deps:
        requirement = Requirement(dep)
        if canonicalize_name(requirement.name) == canonicalize_name(name):
            return requirement.specifier
    return SpecifierSet()


def check(deps: list[str], glibc_minor: int, index_url: str | None) -> Outcome:
    plats = platforms(glibc_minor)
    target = f"CPython 3.11 on linux/aarch64 (manylinux2014 … manylinux_2_{glibc_minor})"
    outcome = Outcome(ok=False, target=target)
    with tempfile.TemporaryDirectory(prefix="rumi-arm64-") as tmp:
        work = Path(tmp)
        links = work / "pure-wheels"
        links.mkdir()
        for _ in range(MAX_PURE_FALLBACKS + 1):
            result = resolve(deps, plats, work, links, index_url)
            if result.returncode == 0:
                report = json.loads((work / "report.json").read_text(encoding="utf-8"))
                for item in report.get("install", []):
                    name = item["metadata"]["name"]
                    url = item.get("download_info", {}).get("url", "")
                    outcome.packages[name] = url.rsplit("/", 1)[-1]
                outcome.ok = True
                return outcome
            match = NOT_FOUND.search(result.stderr)
            if match is None:
                outcome.error = "pip could not resolve: " + " / ".join(
                    result.stderr.strip().splitlines()[-4:])
                return outcome
            name = re.split(r"[<>=!~;\[ ]", match.group(1))[0]
            if name in outcome.pure_sdists:
                outcome.error = f"{name}: still unresolvable after building it: {result.stderr}"
                return outcome
            try:
                wheel = build_from_sdist(name, specifier_for(name, deps), work, links,
                                         index_url or DEFAULT_INDEX)
            except RuntimeError as exc:
                outcome.blocked_by = name
                outcome.error = str(exc)
                return outcome
            if not wheel.endswith("-none-any.whl"):
                outcome.blocked_by = name
                outcome.error = (f"{name} has no aarch64 wheel and builds to a platform wheel "
                                 f"({wheel}): it would need compiling on the Pi")
                return outcome
            outcome.pure_sdists.append(name)
    outcome.error = "too many sdist-only packages"
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pyproject", type=Path, default=REPO / "pyproject.toml")
    parser.add_argument("--glibc", default="2.36",
                        help="target glibc (Raspberry Pi OS / Debian Bookworm: 2.36)")
    parser.add_argument("--extra", action="append", default=[],
                        help="also check an optional-dependencies group")
    parser.add_argument("--index-url", default=None, help="default: pip's (PyPI)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        deps = runtime_dependencies(args.pyproject, args.extra)
        glibc_minor = int(args.glibc.split(".")[1])
    except (OSError, KeyError, ValueError, IndexError, tomllib.TOMLDecodeError) as exc:
        print(f"check_arm64_wheels: cannot read the dependencies: {exc}", file=sys.stderr)
        return 2
    outcome = check(deps, glibc_minor, args.index_url)
    if args.json:
        print(json.dumps(outcome.__dict__, indent=2))
    elif outcome.ok:
        print(f"OK: {len(outcome.packages)} packages install from binary wheels on "
              f"{outcome.target}")
        for name, wheel in sorted(outcome.packages.items(), key=lambda kv: kv[0].lower()):
            note = "  (sdist-only on PyPI, pure Python)" if name in outcome.pure_sdists else ""
            print(f"  {name:<28} {wheel}{note}")
        for name in outcome.pure_sdists:
            print(f"note: {name} has no wheel on PyPI but is pure Python: pip builds it on the "
                  "Pi without a compiler")
    elif outcome.blocked_by:
        print(f"FAIL: {outcome.blocked_by} cannot be installed from wheels on "
              f"{outcome.target}", file=sys.stderr)
        print(f"  {outcome.error}", file=sys.stderr)
    else:
        print(f"ERROR: {outcome.error}", file=sys.stderr)
    if outcome.ok:
        return 0
    return 1 if outcome.blocked_by else 2


if __name__ == "__main__":
    sys.exit(main())
