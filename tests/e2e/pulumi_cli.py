"""The real Pulumi CLI, run for the end-to-end tests: a file backend, a passphrase secrets provider, the toolchain's
Kubernetes provider, and a program served by :mod:`tests.e2e.program_host`.

Everything lives under one directory per workspace (state, PULUMI_HOME, the project copy), so a run touches
nothing of the user's: not ~/.pulumi, not the committed stack files (``pulumi stack init`` writes the passphrase
salt into the stack's config file).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable

from . import processes

ROOT = Path(__file__).resolve().parents[2]
HOST = Path(__file__).with_name("program_host.py")
PASSPHRASE = "k3infra-e2e-passphrase"
# One bound for any single CLI command: an `up` of the existing-cluster stack waits on the provider's awaits.
COMMAND_TIMEOUT = 900
POLL_SECONDS = 3.0
"""How often a running command's ``watch`` is asked."""


def toolchain_bin_dir() -> Path:
    """Where scripts/toolchain puts its binaries (its own answer, so the two never disagree)."""
    out = subprocess.run([str(ROOT / "scripts" / "toolchain"), "--bin-dir"], capture_output=True, text=True,
                         check=True)
    return Path(out.stdout.strip())


@dataclass(frozen=True)
class Toolchain:
    """The built CLI and the provider plugin installed beside it (toolchain/pulumi, toolchain/pulumi-kubernetes)."""

    bin_dir: Path

    @property
    def pulumi(self) -> Path:
        return self.bin_dir / "pulumi"

    @property
    def plugins(self) -> Path:
        """The plugin folder toolchain/pulumi-kubernetes/install fills."""
        return self.bin_dir.parent / "pulumi-home" / "plugins"

    def missing(self, *, provider: bool = True) -> list[str]:
        """What is not built yet, in words."""
        out = []
        if not os.access(self.pulumi, os.X_OK):
            out.append(f"the Pulumi CLI ({self.pulumi})")
        if provider and not any(self.plugins.glob("resource-kubernetes-v*/pulumi-resource-kubernetes")):
            out.append(f"the Kubernetes provider plugin (under {self.plugins})")
        return out


@dataclass
class Workspace:
    """A project directory, its state and its PULUMI_HOME, all under ``root``."""

    toolchain: Toolchain
    root: Path
    project: Path
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, toolchain: Toolchain, root: Path, project_yaml: str, *, extra_env: dict[str, str] | None = None,
               files: dict[str, str] | None = None) -> "Workspace":
        """A workspace whose project is ``project_yaml`` (a Pulumi.yaml text) plus ``files``; logged in to a
        file backend under ``root``."""
        project = root / "project"
        home = root / "pulumi-home"
        state = root / "state"
        for d in (project, home, state):
            d.mkdir(parents=True, exist_ok=True)
        (project / "Pulumi.yaml").write_text(project_yaml)
        for name, text in (files or {}).items():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            (project / name).write_text(text)
        toolchain.plugins.mkdir(parents=True, exist_ok=True)
        (home / "plugins").symlink_to(toolchain.plugins, target_is_directory=True)
        env = {
            **os.environ,
            "PATH": f"{toolchain.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "PULUMI_HOME": str(home),
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING": "true",
            "NO_COLOR": "1",
            **(extra_env or {}),
        }
        env.pop("PULUMI_ACCESS_TOKEN", None)
        env.pop("PULUMI_BACKEND_URL", None)
        ws = cls(toolchain=toolchain, root=root, project=project, env=env)
        ws.cli("login", f"file://{state}")
        return ws

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    def state_file(self, project: str, stack: str) -> Path:
        """The file backend's checkpoint of a stack (.pulumi/stacks/PROJECT/STACK.json)."""
        return self.state_dir / ".pulumi" / "stacks" / project / f"{stack}.json"

    def cli(self, *args: str, check: bool = True, timeout: int = COMMAND_TIMEOUT,
            watch: Callable[[], str | None] | None = None) -> subprocess.CompletedProcess[str]:
        """``pulumi ARGS`` in the project directory, without a program. ``watch`` (``StuckPods``) is asked every
        POLL_SECONDS while the CLI runs: once it names a problem, or past ``timeout``, the CLI and every process it
        started (its provider plugins, each in a process group of its own: ``processes.kill_tree``) are killed, and
        the failure names the problem, the command and its output so far, and any process the kill left."""
        with subprocess.Popen([str(self.toolchain.pulumi), *args, "--non-interactive"], cwd=self.project,
                              env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True) as cli:
            output = _Output(cli)
            deadline = time.monotonic() + timeout
            while True:
                try:
                    cli.wait(timeout=POLL_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    problem = f"did not finish within {timeout} s" if time.monotonic() > deadline else (
                        watch() if watch is not None else None)
                if problem:
                    left = processes.kill_tree(cli.pid)
                    cli.wait()
                    out, err = output.join()
                    proc = subprocess.CompletedProcess(cli.args, -9, out, err)
                    raise AssertionError(_failure(args, proc).replace(" exited -9", f": {problem}", 1)
                                         + (f"\nprocesses left running: {left}" if left else ""))
            out, err = output.join()
        proc = subprocess.CompletedProcess(cli.args, cli.returncode, out, err)
        if check and proc.returncode != 0:
            raise AssertionError(_failure(args, proc))
        return proc

    def run(self, program: str, *args: str, check: bool = True, timeout: int = COMMAND_TIMEOUT,
            watch: Callable[[], str | None] | None = None) -> subprocess.CompletedProcess[str]:
        """``pulumi ARGS --client ADDR`` with ``program`` (a path to a ``__main__.py`` or ``module:function``)
        served by a fresh program host, which is stopped afterwards."""
        host = subprocess.Popen([sys.executable, str(HOST), program], cwd=self.project, env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert host.stdout is not None
            port = host.stdout.readline().strip()
            if not port.isdigit():
                host.kill()
                _, err = host.communicate(timeout=30)
                raise AssertionError(f"the program host did not start: {err}")
            return self.cli(*args, f"--client=127.0.0.1:{port}", check=check, timeout=timeout, watch=watch)
        finally:
            host.send_signal(signal.SIGTERM)
            try:
                host.wait(timeout=30)
            except subprocess.TimeoutExpired:
                host.kill()
                host.wait(timeout=30)

    def stack_init(self, stack: str) -> None:
        self.cli("stack", "init", stack, "--secrets-provider", "passphrase")

    def preview_json(self, program: str, stack: str, *extra: str) -> dict[str, Any]:
        """``pulumi preview --json``: the engine's steps, each with its URN, type and new state (parent)."""
        proc = self.run(program, "preview", "-s", stack, "--json", *extra)
        return json.loads(proc.stdout)

    def outputs(self, stack: str, *, show_secrets: bool = False) -> dict[str, Any]:
        args = ["stack", "output", "-s", stack, "--json"] + (["--show-secrets"] if show_secrets else [])
        return json.loads(self.cli(*args).stdout)

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class _Output:
    """The CLI's stdout and stderr, read to the end by two threads while the caller polls the process."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.parts: dict[str, list[str]] = {"out": [], "err": []}
        self.threads = [threading.Thread(target=self._read, args=(stream, self.parts[key]), daemon=True)
                        for key, stream in (("out", proc.stdout), ("err", proc.stderr))]
        for t in self.threads:
            t.start()

    @staticmethod
    def _read(stream: IO[str] | None, into: list[str]) -> None:
        if stream is not None:
            for line in stream:
                into.append(line)

    def join(self) -> tuple[str, str]:
        for t in self.threads:
            t.join(timeout=30)
        return "".join(self.parts["out"]), "".join(self.parts["err"])


def _failure(args: tuple[str, ...], proc: subprocess.CompletedProcess[str]) -> str:
    tail = lambda s: "\n".join(s.splitlines()[-60:])  # noqa: E731
    return (f"pulumi {' '.join(args)} exited {proc.returncode}\n--- stdout ---\n{tail(proc.stdout)}\n"
            f"--- stderr ---\n{tail(proc.stderr)}")
