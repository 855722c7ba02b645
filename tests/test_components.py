"""Every public component: importable lazily from ``k3infra``, and strict about its arguments."""

import importlib

import pulumi
import pytest

import k3infra
from tests.support import record

DESIGN_COMPONENTS = {
    "EksCluster", "EksGpuNodeGroup", "S3WeightBucket", "HyperPodCluster", "HyperPodEndpoint", "AksCluster",
    "AksGpuNodePool", "BlobWeightBucket", "GkeCluster", "GkeGpuNodePool", "GcsWeightBucket", "AckCluster",
    "AckGpuNodePool", "OssWeightBucket", "PaiEasService", "ModelServer", "WeightSync", "InferenceGateway",
}
"""The component list of DESIGN.md."""


def test_every_component_of_design_md_is_public():
    assert set(k3infra.COMPONENTS) == DESIGN_COMPONENTS
    for name, module in k3infra.COMPONENTS.items():
        cls = getattr(k3infra, name)
        assert cls is getattr(importlib.import_module(module), name)
        assert issubclass(cls, pulumi.ComponentResource)
        assert cls.__doc__ and cls.__init__.__doc__ is None or cls.__doc__


@pytest.mark.parametrize("name", sorted(DESIGN_COMPONENTS))
def test_a_misspelt_argument_is_an_error_not_silently_dropped(name):
    cls = getattr(k3infra, name)

    def program():
        cls("x", {"node_cuont": 3})

    with pytest.raises(pulumi.InputPropertyError) as e:
        record(program)
    assert e.value.property_path == "node_cuont"
    assert f"{cls.__name__}Args has no argument 'node_cuont'" in e.value.reason
