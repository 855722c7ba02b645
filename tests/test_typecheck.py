"""k3infra/ type-checks against the pinned provider SDKs, so a misspelt field fails here and not in a cloud."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT


def test_basedpyright_reports_no_errors():
    exe = Path(sys.executable).parent / "basedpyright"
    binary = str(exe) if exe.exists() else shutil.which("basedpyright")
    if binary is None:
        pytest.fail("basedpyright is not installed: pip install -e '.[test]'")
    result = subprocess.run([binary, "--pythonpath", sys.executable, "k3infra"], cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "0 errors" in result.stdout
