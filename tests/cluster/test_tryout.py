"""scripts/local-cluster start --stack: the local try-out of docs/try-it.md, on a control plane of its own (the try-out
keeps background processes and a state file in its directory, which ``stop`` ends and removes)."""

import json
from pathlib import Path

import boto3

from tests.e2e.s3_server import FIXTURE

from .conftest import require_toolchain
from .local import LocalCluster, main
from .tryout import S3_KEYS, _alive, read


def test_start_with_a_stack_gives_its_nodes_driver_and_bucket_and_stop_ends_them(tmp_path: Path, capsys) -> None:
    require_toolchain()
    directory = tmp_path / "cluster"
    try:
        assert main(["start", "--stack", "kubernetes-gb300-nvl72", "--dir", str(directory)]) == 0
        cluster = LocalCluster(directory, tie_to_parent=False)
        state = read(cluster)
        assert state is not None and sorted(state["pids"]) == ["compute-domain-controller", "s3"]
        assert all(_alive(pid, cluster) for pid in state["pids"].values())
        nodes = json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
        gpu = {n["metadata"]["name"]: n for n in nodes if "nvidia.com/gpu" in n["status"]["capacity"]}
        assert sorted(gpu) == ["gpu-0", "gpu-1"] == state["gpuNodes"]
        assert {n["status"]["capacity"]["nvidia.com/gpu"] for n in gpu.values()} == {"4"}
        assert {n["metadata"]["labels"]["kubernetes.io/arch"] for n in gpu.values()} == {"arm64"}
        classes = cluster.kubectl("get", "deviceclasses", "-o", "jsonpath={.items[*].metadata.name}").stdout.split()
        assert sorted(classes) == ["compute-domain-daemon.nvidia.com", "compute-domain-default-channel.nvidia.com"]
        s3 = boto3.client("s3", endpoint_url=state["s3Endpoint"], region_name="us-east-1",
                          aws_access_key_id=S3_KEYS[0], aws_secret_access_key=S3_KEYS[1])
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket="kimi-k3-weights")["Contents"]]
        assert keys == sorted(FIXTURE)
        out = capsys.readouterr().out
        assert f"  pulumi config set --path k3infra:kubernetes.storage.endpoint {state['s3Endpoint']} -s STACK" in out
        assert "  pulumi config set --path k3infra:kubernetes.lws present -s STACK" in out
        assert main(["start", "--stack", "kubernetes-b300", "--dir", str(directory)]) == 2  # one try-out at a time
    finally:
        pids = list((read(LocalCluster(directory)) or {}).get("pids", {}).values())
        assert main(["stop", "--dir", str(directory)]) == 0
    assert not (directory / "tryout.json").exists()
    assert not [p for p in pids if _alive(p, LocalCluster(directory))]
