"""The ``local_cluster`` fixture: one local control plane per test session (per xdist worker), stopped at the end.

Skipped with the reason when scripts/toolchain has not built the programs, so the README's test command passes on a
machine without Go; ``K3INFRA_REQUIRE_CLUSTER=1`` (set by .ci/run, which builds the toolchain first) turns that
skip into a failure.
"""

import os
from collections.abc import Iterator

import pytest

from .local import TOOLCHAIN_HOME, LocalCluster, missing_programs

REQUIRE_ENV = "K3INFRA_REQUIRE_CLUSTER"


def require_toolchain() -> None:
    """Skips (or, under K3INFRA_REQUIRE_CLUSTER=1, fails) the calling test when the toolchain is not built."""
    missing = missing_programs()
    if not missing:
        return
    reason = (f"the local-cluster toolchain is not built (missing {', '.join(missing)} under {TOOLCHAIN_HOME}): "
              "run scripts/toolchain (once per machine, 12 to 40 minutes on 2 cores: docs/development.md)")
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A started LocalCluster (kubectl, kubeconfig); its state directory is a session temporary directory."""
    require_toolchain()
    cluster = LocalCluster(tmp_path_factory.mktemp("cluster"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
