"""Fixtures shared by the cluster test modules."""

import pytest

from .deploy import install_crds
from .local import LocalCluster


@pytest.fixture(scope="session")
def cluster(local_cluster: LocalCluster) -> LocalCluster:
    """The session's cluster with every vendored CRD installed (idempotent)."""
    install_crds(local_cluster)
    return local_cluster
