"""`rumi doctor`: checks that a host can run Rumi well, each with the fix when it cannot.

Reuse from elsewhere (e.g. `/status`): `await run_checks(settings, only=["docker"])`.
"""

from rumi.base.checks import CheckResult, Status, mask
from rumi.doctor.runner import CHECKS, Host, run_checks

__all__ = ["CHECKS", "CheckResult", "Host", "Status", "mask", "run_checks"]
