"""Issue 39, "each role of a disaggregated one": every role whose groups span nodes gets its own fabric check, built
from that role's pod template (its collective environment), size, groups and paths (``sizing.fabric_plan`` on the
role's layout), and that role's server waits for its own check."""

import json

import pytest

from k3infra import offline
from tests import support

FABRIC = "k3infra:index:FabricCheck"
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
NVLINK, RDMA = ("nvlink", 900.0), ("rdma", 187.5)


@pytest.mark.parametrize("stack,paths", [
    ("kubernetes-gb300-nvl72-pd", {"prefill": [("tensor-parallel", "all_reduce", 8, *NVLINK),
                                               ("expert-parallel", "all_to_all", 8, *NVLINK)],
                                   "decode": [("expert-parallel", "all_to_all", 16, *NVLINK)]}),
    ("gcp-a4xmax-pd", {"prefill": [("tensor-parallel", "all_reduce", 8, *NVLINK),
                                   ("expert-parallel", "all_to_all", 8, *NVLINK)],
                       "decode": [("expert-parallel", "all_to_all", 16, *NVLINK)]}),
    # p6-b300: the prefill group is one node (no check); the decode's DEP 16 spans two nodes over EFA.
    ("aws-eks-pd", {"decode": [("expert-parallel", "all_to_all", 16, *RDMA)]}),
])
def test_each_multi_node_role_has_its_own_check(stack: str, paths: dict[str, list[tuple]]) -> None:
    rec = support.plan(stack).recording
    assert sorted(r.name for r in rec.by_type(FABRIC)) == sorted(f"k3-{role}-fabric" for role in paths)
    assert not [r for r in rec.resources if r.name == "k3-fabric"], "no check of the base layout's replica"
    report = rec.outputs["fabricCheck"]["roles"]
    assert {role: [(p["name"], p["collective"], p["ranks"], p["expect"], p["expectedBusbwGBs"])
                   for p in r["paths"]] for role, r in report.items()} == paths
    for role in paths:
        # the server waits for its own role's Job, not the other's
        server = rec.one(LWS, f"k3-{role}-workload")  # every multi-node role runs a LeaderWorkerSet
        waits = {d.split("::")[-1] for d in server.dependencies if "-fabric-" in d and d.endswith("-job")}
        assert waits == {f"k3-{role}-fabric-0-job"}


def test_a_role_s_check_runs_on_that_role_s_group() -> None:
    """The decode's check: one Job of 4 indexed pods (its group size), each with the node's 4 GPUs and the IMEX
    channel of its own ComputeDomain, the decode's collective environment, and the decode's paths in its plan."""
    rec = support.plan("kubernetes-gb300-nvl72-pd").recording
    job = offline.plain(rec.one("kubernetes:batch/v1:Job", "k3-decode-fabric-0-job").inputs)
    assert (job["spec"]["completions"], job["spec"]["parallelism"]) == (4, 4)
    pod = job["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["LWS_GROUP_SIZE"] == "4" and env["UCX_TLS"] == "tcp,cuda_copy" and env["NCCL_MNNVL_ENABLE"] == "1"
    assert [p["ranks"] for p in json.loads(env["K3_FABRIC_PLAN"])["paths"]] == [list(range(16))]
    assert pod["resourceClaims"] == [{"name": "nvlink-channel",
                                      "resourceClaimTemplateName": "k3-decode-fabric-nvlink-0-channel"}]
    prefill = offline.plain(rec.one("kubernetes:batch/v1:Job", "k3-prefill-fabric-0-job").inputs)
    assert (prefill["spec"]["completions"], prefill["spec"]["parallelism"]) == (2, 2)


def test_turned_off_no_role_has_a_check() -> None:
    rec = support.plan("kubernetes-gb300-nvl72-pd", "fabricCheck.enabled=false").recording
    assert rec.by_type(FABRIC) == []
