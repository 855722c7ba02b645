"""The Azure components are usable from other Pulumi languages: the component analyzer reads their Args."""

import json

from pulumi.provider.experimental.component import ComponentProvider

from k3infra.azure import AksCluster, AksGpuNodePool, BlobWeightBucket


def test_schema() -> None:
    schema = json.loads(ComponentProvider([AksCluster, AksGpuNodePool, BlobWeightBucket], "k3infra",
                                          version="0.0.0").schema)
    resources = schema["resources"]
    assert set(resources) == {"k3infra:index:AksCluster", "k3infra:index:AksGpuNodePool",
                              "k3infra:index:BlobWeightBucket"}
    pool = resources["k3infra:index:AksGpuNodePool"]
    assert pool["inputProperties"]["clusterIdentity"]["$ref"] == "#/types/k3infra:index:ClusterIdentity"
    assert "clusterIdentity" in pool["requiredInputs"]
    assert [e["value"] for e in schema["types"]["k3infra:index:GpuDriver"]["enum"]] == ["Install", "None"]
    assert "identityType" not in resources["k3infra:index:AksCluster"]["inputProperties"]
    for resource in resources.values():  # every argument says what it does by default
        assert all(p.get("description") for p in resource["inputProperties"].values())
