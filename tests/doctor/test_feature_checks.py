"""Doctor checks come through the Feature interface: the built-in features contribute theirs
(memory: SQLite and rumi.db; sandbox: the workspace limit) and a third-party feature's check
runs beside them, isolated like every other (issue 25: one way to wire a feature)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rumi.app import builtin_features
from rumi.base.checks import CheckResult, DoctorCheck, Status, warned
from rumi.base.feature import FeatureHost
from rumi.cli import main
from rumi.config import Settings
from rumi.doctor.runner import CHECKS, all_checks, run_checks

NO_SANDBOX = "[sandbox]\nenabled = false\n"


class TinyFeature:
    """What a plugin would be: nothing in setup, one check that reads the settings."""

    name = "tiny"

    async def setup(self, host: FeatureHost) -> None:
        pass

    def doctor_checks(self) -> list[DoctorCheck]:
        async def disk_of_the_plugin(settings: Settings) -> CheckResult:
            return warned("tiny", f"tiny looked at {settings.data_dir}", "feed the tiny plugin")

        async def crashes(settings: Settings) -> CheckResult:
            raise RuntimeError("tiny broke")

        return [DoctorCheck("tiny", disk_of_the_plugin), DoctorCheck("tiny crash", crashes)]


class SilentFeature:
    """A feature without doctor checks: nothing is asked of it."""

    name = "silent"

    async def setup(self, host: FeatureHost) -> None:
        pass


def test_builtin_features_contribute_their_checks() -> None:
    names = list(all_checks(builtin_features()))
    assert names[:len(CHECKS)] == list(CHECKS)
    assert {"workspace limit", "sqlite", "memory database"} <= set(names[len(CHECKS):])
    assert "sqlite" not in CHECKS and "memory database" not in CHECKS


async def test_a_third_party_check_runs_beside_the_builtin_ones(make_settings) -> None:
    settings = make_settings(NO_SANDBOX)
    features = [*builtin_features(), SilentFeature(), TinyFeature()]
    results = {r.name: r for r in await run_checks(settings, features=features)}
    assert results["tiny"].status is Status.WARN
    assert str(settings.data_dir) in results["tiny"].detail
    assert results["tiny"].fix == "feed the tiny plugin"
    crashed = results["tiny crash"]
    assert crashed.status is Status.FAIL and "RuntimeError: tiny broke" in crashed.detail
    assert results["sqlite"].status is Status.OK
    assert results["memory database"].status is Status.OK
    assert results["workspace limit"].status is Status.OK  # disabled sandbox: nothing to limit
    only = await run_checks(settings, only=["tiny"], features=[TinyFeature()])
    assert [r.name for r in only] == ["tiny"]


def test_a_check_named_like_an_earlier_one_is_kept_under_its_features_name() -> None:
    class Clash(TinyFeature):
        name = "clash"

        def doctor_checks(self) -> list[DoctorCheck]:
            return [DoctorCheck("sqlite", TinyFeature().doctor_checks()[0].run)]

    names = list(all_checks([*builtin_features(), Clash()]))
    assert "sqlite" in names and "sqlite (clash)" in names


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "doctor.toml"
    path.write_text(f'data_dir = "{tmp_path / "data"}"\n[llm]\napi_key = "gsk_1"\n' + NO_SANDBOX)
    path.chmod(0o600)
    return path


def test_rumi_doctor_runs_the_features_checks(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--json", "--config", str(_config(tmp_path)),
                 "--check", "memory database", "--check", "workspace limit"])
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert code == 0 and set(rows) == {"memory database", "workspace limit"}


def test_an_unknown_check_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--config", str(_config(tmp_path)), "--check", "nonsense"]) == 2
    err = capsys.readouterr().err
    assert "unknown doctor checks: nonsense" in err and "Traceback" not in err
