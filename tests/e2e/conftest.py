"""Fixtures of the end-to-end tests: the real Pulumi CLI and Kubernetes provider (scripts/toolchain builds them).

Without them the tests skip, saying what is missing and how to build it, so the README's test command passes on a
machine without Go; with K3INFRA_REQUIRE_CLUSTER=1 (.ci/run sets it after building the toolchain) they fail instead.
"""

import os
from pathlib import Path
from typing import Callable

import pytest

from .pulumi_cli import Toolchain, Workspace, toolchain_bin_dir


def _require(missing: list[str]) -> None:
    if missing:
        reason = f"not built: {', '.join(missing)}; run scripts/toolchain"
        if os.environ.get("K3INFRA_REQUIRE_CLUSTER") == "1":
            pytest.fail(reason + " (K3INFRA_REQUIRE_CLUSTER=1)")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    """The CLI and the Kubernetes provider plugin."""
    tools = Toolchain(toolchain_bin_dir())
    _require(tools.missing())
    return tools


@pytest.fixture(scope="session")
def cli_only() -> Toolchain:
    """The CLI, for what runs no Kubernetes resource."""
    tools = Toolchain(toolchain_bin_dir())
    _require(tools.missing(provider=False))
    return tools


def _factory(tools: Toolchain, tmp_path: Path) -> Callable[..., Workspace]:
    made: list[Workspace] = []

    def make(project_yaml: str, **kwargs) -> Workspace:
        ws = Workspace.create(tools, tmp_path / f"ws{len(made)}", project_yaml, **kwargs)
        made.append(ws)
        return ws

    return make


@pytest.fixture
def workspace(toolchain: Toolchain, tmp_path: Path) -> Callable[..., Workspace]:
    """``workspace(project_yaml, files=..., extra_env=...)``: a fresh project with a file backend under tmp_path."""
    return _factory(toolchain, tmp_path)


@pytest.fixture
def cli_workspace(cli_only: Toolchain, tmp_path: Path) -> Callable[..., Workspace]:
    """A workspace for what needs the CLI only."""
    return _factory(cli_only, tmp_path)


try:  # the local control plane's fixture (tests/cluster/conftest.py), shared with this directory
    from tests.cluster.conftest import local_cluster  # noqa: F401
except ImportError:  # the cluster harness is not on this branch yet
    @pytest.fixture(scope="session")
    def local_cluster():
        pytest.skip("tests/cluster (the local control plane) is not on this branch")
