"""scripts/architecture_report.py counts what docs/architecture.md reports: checked on a small
tree built to hold one of each thing it looks for, and on the real tree's own listing."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from tests.conftest import REPO

SCRIPT = REPO / "scripts" / "architecture_report.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("architecture_report", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _sample_tree(root: Path) -> Path:
    _write(root, "rumi/__init__.py", "")
    _write(root, "rumi/a/__init__.py", "")
    _write(root, "rumi/a/one.py", "from rumi.a import two\n\n\ndef _helper():\n    return 1\n")
    _write(root, "rumi/a/two.py", "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                  "    from rumi.a import one\n")
    _write(root, "rumi/b.py", "import rumi.c\n\n\ndef use(x):\n    return x._helper()\n")
    _write(root, "rumi/c.py", "from rumi import b\n\nclient = AsyncGroq(api_key='k')\n")
    body = "\n".join(f"    x = {i}" for i in range(55))
    _write(root, "rumi/d.py", f'"""SELECT a FROM docs only."""\n\n\ndef f():\n{body}\n'
                              "    return 'SELECT id FROM memories'\n")
    _write(root, "rumi/store.py", "Q = 'INSERT INTO memories VALUES (?)'\n")
    _write(root, "tests/test_loose.py", "")
    _write(root, "tests/a/test_placed.py", "")
    return root


def test_each_count_sees_its_case(tmp_path: Path) -> None:
    report = _script().measure(_sample_tree(tmp_path))
    assert report["module_cycles"]["groups"] == [["rumi.a.one", "rumi.a.two"], ["rumi.b", "rumi.c"]]
    assert report["package_cycles"]["groups"] == [["rumi.b", "rumi.c"]]
    assert report["private_cross_module"]["uses"] == ["rumi.b:5 _helper"]
    assert report["functions_over_50"]["functions"] == ["rumi.d.f 57"]
    assert report["functions_over_60"]["count"] == 0
    assert report["asyncgroq_call_sites"]["sites"] == ["rumi.c:3"]
    assert report["sql_files_outside_stores"]["modules"] == ["rumi.d"]   # not the store
    assert report["loose_test_files"]["files"] == ["test_loose.py"]


def test_the_script_prints_json_then_a_table_for_the_real_tree() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), "--json"], capture_output=True,
                         text=True, timeout=300, check=True).stdout
    report = json.loads(out)
    loose = sorted(p.name for p in (REPO / "tests").glob("test_*.py"))
    assert report["loose_test_files"]["files"] == loose
    assert report["modules"] == len([p for p in (REPO / "rumi").rglob("*.py")])
    table = subprocess.run([sys.executable, str(SCRIPT), "--markdown"], capture_output=True,
                           text=True, timeout=300, check=True).stdout
    assert table.startswith("| measure | count |")
    assert f"| loose test files | {len(loose)} |" in table
