"""``Workspace.cli``'s watch, without the toolchain: a stand-in ``pulumi`` that starts a plugin in a process group of
its own (as the CLI does) and never ends; the watch names a problem, the command is stopped with that problem in its
failure, and nothing it started is left running."""

import stat
from pathlib import Path

import pytest

from . import processes
from .pulumi_cli import Toolchain, Workspace

FAKE_CLI = """#!/bin/sh
case "$1" in login) exit 0;; esac
setsid sleep 300 &
sleep 300
"""


def test_a_watched_command_stops_naming_the_problem_and_leaves_no_process(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pulumi").write_text(FAKE_CLI)
    (bin_dir / "pulumi").chmod(0o755 | stat.S_IXUSR)
    ws = Workspace.create(Toolchain(bin_dir), tmp_path / "ws", "name: watched\nruntime: python\n")
    calls: list[int] = []

    def watch() -> str | None:
        calls.append(1)
        return "pod kimi-k3/k3-server-0 cannot schedule: planted" if len(calls) >= 2 else None

    with pytest.raises(AssertionError) as failed:
        ws.cli("up", "--yes", watch=watch, timeout=120)
    assert str(failed.value).splitlines()[0] == "pulumi up --yes: pod kimi-k3/k3-server-0 cannot schedule: planted"
    assert "processes left running" not in str(failed.value)
    assert processes.with_env("PULUMI_HOME", ws.env["PULUMI_HOME"]) == []
