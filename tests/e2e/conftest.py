"""Fixtures of the end-to-end tests: the real Pulumi CLI and Kubernetes provider (scripts/toolchain builds them).

Without them the tests skip, saying what is missing and how to build it, so the README's test command passes on a
machine without Go; with K3INFRA_REQUIRE_CLUSTER=1 (.ci/run sets it after building the toolchain) they fail instead.
"""

import os
from pathlib import Path
from typing import Callable, Iterator

import pytest

from .pulumi_cli import Toolchain, Workspace, toolchain_bin_dir


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    tools = Toolchain(toolchain_bin_dir())
    missing = tools.missing()
    if missing:
        reason = f"not built: {', '.join(missing)}; run scripts/toolchain"
        if os.environ.get("K3INFRA_REQUIRE_CLUSTER") == "1":
            pytest.fail(reason + " (K3INFRA_REQUIRE_CLUSTER=1)")
        pytest.skip(reason)
    return tools


@pytest.fixture
def workspace(toolchain: Toolchain, tmp_path: Path) -> Iterator[Callable[..., Workspace]]:
    """``workspace(project_yaml, files=..., extra_env=...)``: a fresh project with a file backend under tmp_path."""
    made: list[Workspace] = []

    def make(project_yaml: str, **kwargs) -> Workspace:
        ws = Workspace.create(toolchain, tmp_path / f"ws{len(made)}", project_yaml, **kwargs)
        made.append(ws)
        return ws

    yield make


try:  # the local control plane's fixture (tests/cluster/conftest.py), shared with this directory
    from tests.cluster.conftest import local_cluster  # noqa: F401
except ImportError:  # the cluster harness is not on this branch yet
    @pytest.fixture(scope="session")
    def local_cluster():
        pytest.skip("tests/cluster (the local control plane) is not on this branch")
