"""Helpers for the tests: plan stacks, run programs under the recording engine, find the vendored CRDs."""

import functools
import importlib.util
import os
from importlib.machinery import SourceFileLoader
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pytest

from k3infra import offline, planning
from k3infra.offline import Recording

ROOT = Path(__file__).resolve().parent.parent


CRDS = ROOT / "schemas" / "crds"
"""The vendored upstream CRDs (schemas/crds/SOURCES.md names each one's repository, ref and path)."""
STACKS = planning.stack_names(ROOT)


@functools.lru_cache(maxsize=None)
def plan(ref: str, *sets: str) -> planning.Plan:
    """The offline plan of a stack (cached: plans are deterministic)."""
    return planning.plan(ref, sets, root=ROOT)


def record(program: Callable[[], Any], *, stack: str = "test", config: dict[str, Any] | None = None) -> Recording:
    """Run ``program`` (which registers resources) under the recording engine."""
    return offline.run(program, project="k3infra", stack=stack, config=config or {})


def load_script(name: str) -> ModuleType:
    """A Python program under scripts/ (no .py suffix), imported as a module."""
    loader = SourceFileLoader(name.replace("-", "_"), str(ROOT / "scripts" / name))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def inventory(rec: Recording) -> list[tuple[str, str, str | None]]:
    """(type, name, parent type) of every registration, in stable order."""
    return [(r.type, r.name, r.parent_type) for r in rec.ordered()]


def checkov_binary() -> str:
    """$K3INFRA_CHECKOV, else /tmp/ckv/bin/checkov, else .checkov-venv/bin/checkov (scripts/test installs it).

    Never skipped: a missing scanner fails the test with how to get it."""
    for candidate in (os.environ.get("K3INFRA_CHECKOV"), "/tmp/ckv/bin/checkov", str(ROOT / ".checkov-venv/bin/checkov")):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail("checkov not found: run ./scripts/test (it installs checkov in .checkov-venv) or set K3INFRA_CHECKOV")
