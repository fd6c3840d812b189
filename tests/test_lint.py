"""The code is linted and formatted as pyproject.toml's [tool.ruff] says: a violation fails the suite (and CI)."""

import subprocess
import sys

from tests.conftest import REPO


def test_ruff_finds_nothing_to_lint_or_format():
    for command in (["check", "."], ["format", "--check", "."]):
        result = subprocess.run([sys.executable, "-m", "ruff", *command], cwd=REPO, capture_output=True, text=True)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
