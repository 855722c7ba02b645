"""Loader x distribution (issue 36, major 5 and minor 6): what each node of every stack fetches from the bucket follows
from how its rendered engine command splits the reads at the pinned versions, not from the sizing's own assumption.

The rules below are the test's own reading of the sources, kept apart from k3infra.catalog.distribution:

- runai-model-streamer (0.15.7 and 0.17.1, distributed_streamer.py): without ``distributed`` every rank streams the
  whole checkpoint; with it the ranks of ONE node split it unless ``RUNAI_STREAMER_DIST_GLOBAL=1`` makes the group
  every rank of the replica (docs/src/usage.md "Global and local modes"); a split by tensor ranges touches every
  file from every node, so through gcsfuse's whole-object cache (``cache-file-for-range-read:true``) each node
  downloads every file unless ``RUNAI_STREAMER_PARTITION_POLICY=files``;
- vLLM 0.33.0 fastsafetensors: one whole file per rank of the WORLD group;
- any other format: each node reads the whole checkpoint.
"""

import json
import math
from fractions import Fraction
from typing import Any, Iterator

import pytest

from k3infra import offline
from k3infra.serving.roles import role_server_name
from tests.support import STACKS, plan

LAYOUTS = [(stack, ()) for stack in STACKS] + [
    ("kubernetes-gb300-nvl72", ("tensorParallel=4",)),  # pipeline stages over the cluster's pod network
    ("azure-gb300", ("tensorParallel=4",)),
    ("gcp-a4-sglang", ("tensorParallel=8",)),
    ("gcp-a4xmax", ("loadFormat=runai_streamer",)),  # vLLM's streamer through gcsfuse
    ("alicloud-ack", ("loadFormat=safetensors",)),
]
"""Every stack as it ships, and layouts and load formats that change how the nodes split the reads."""


def _words(container: dict[str, Any]) -> list[str]:
    text = " ".join([*container.get("command", []), *container.get("args", []), container.get("script", "")])
    return text.split()


def _flag(words: list[str], name: str) -> str | None:
    return words[words.index(name) + 1] if name in words else None


def _servers(stack: str, sets: tuple[str, ...]) -> Iterator[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """(ModelServer name, engine container, pod volumes) of every server pod template (a topology's roles each have
    their own), and PAI-EAS's container."""
    for r in plan(stack, *sets).recording.resources:
        if r.parent_type == "k3infra:index:ModelServer" and r.name.endswith("-workload"):
            spec = offline.unwrap(r.inputs)["spec"]
            lwt = spec.get("leaderWorkerTemplate")
            for t in ([lwt["leaderTemplate"], lwt["workerTemplate"]] if lwt else [spec["template"]]):
                (engine,) = [c for c in t["spec"]["containers"] if c["name"] == "engine"]
                yield r.name.removesuffix("-workload"), engine, t["spec"].get("volumes", [])
        if r.type == "alicloud:pai/service:Service":
            yield "k3-server", json.loads(offline.unwrap(r.inputs)["serviceConfig"])["containers"][0], []


def expected_share(container: dict[str, Any], volumes: list[dict[str, Any]], nodes: int, ranks: int) -> Fraction:
    words = _words(container)
    fmt = _flag(words, "--load-format")
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    extra = json.loads((_flag(words, "--model-loader-extra-config") or "{}").strip("'"))
    # gcsfuse's file cache on: a first read at offset 0 downloads the whole object (catalog.distribution)
    whole_objects = any(any(o.startswith("file-cache:max-size-mb:") and o != "file-cache:max-size-mb:0"
                            for o in v.get("csi", {}).get("volumeAttributes", {}).get("mountOptions", "").split(","))
                        for v in volumes)
    if fmt == "fastsafetensors":
        return Fraction(1, nodes)
    if fmt != "runai_streamer":
        return Fraction(1)
    if not extra.get("distributed"):
        return Fraction(1 if whole_objects else ranks)
    if env.get("RUNAI_STREAMER_DIST_GLOBAL") != "1":
        return Fraction(1)
    if whole_objects:  # every rank reads every file's header first, whatever the partition policy
        return Fraction(1)
    return Fraction(1, nodes)


def _checkpoint(stack: str, *sets: str) -> int:
    """Bytes of the model, with its draft where the stack decodes speculatively."""
    cfg = plan(stack, *sets).config
    draft = cfg.model.draft_model if cfg.speculative_decoding else None
    return cfg.model.weight_bytes + (draft.weight_bytes if draft else 0)


@pytest.mark.parametrize(("stack", "sets"), LAYOUTS)
def test_what_each_node_fetches_follows_the_rendered_split(stack: str, sets: tuple[str, ...]) -> None:
    """Per group: the aggregated replica, or each role of a topology (whose DEP groups' engines each hold one GPU
    but load as one process group: vLLM's WORLD spans the data-parallel ranks)."""
    p = plan(stack, *sets)
    s = p.config.sizing
    total = _checkpoint(stack, *sets)
    servers = list(_servers(stack, sets))
    if not servers:  # HyperPod: its operator copies the whole checkpoint to the instance
        assert (p.config.weights.loader, s.load.bytes_per_node) == ("bucket-copy", total)
        return
    ranks = p.config.accelerator.gpus_per_node
    groups = {"k3-server": (s.nodes, s.load.bytes_per_node)}
    if s.topology is not None:
        groups.update({role_server_name("k3", r.name): (r.nodes, r.load_bytes_per_node) for r in s.topology.roles})
    assert {name for name, _, _ in servers} <= set(groups), (stack, groups)
    for name in {name for name, _, _ in servers}:
        nodes, fetched = groups[name]
        shares = {expected_share(c, v, nodes, ranks) for n, c, v in servers if n == name}
        assert len(shares) == 1, (name, shares)  # leader and workers split alike
        assert fetched == math.ceil(total * shares.pop()), (stack, sets, name)


SHIPPED = {
    "alicloud-ack": Fraction(1, 3), "alicloud-pai": Fraction(1, 3), "aws-eks": Fraction(1), "aws-hyperpod": Fraction(1),
    "azure-gb300": Fraction(1, 2), "gcp-a4-sglang": Fraction(1), "gcp-a4x-sglang": Fraction(1),
    "gcp-a4xmax": Fraction(1, 2), "kubernetes-b300": Fraction(1), "kubernetes-gb300-nvl72": Fraction(1, 2),
    "aws-eks-pd": {"prefill": Fraction(1), "decode": Fraction(1, 2)},
    "azure-gb300-pd": {"prefill": Fraction(1, 2), "decode": Fraction(1, 4)},
    "gcp-a4xmax-pd": {"prefill": Fraction(1, 2), "decode": Fraction(1, 4)},
    "kubernetes-gb300-nvl72-pd": {"prefill": Fraction(1, 2), "decode": Fraction(1, 4)},
}
"""Each stack's nodes (each role's group's, in a topology) split one copy of the checkpoint, except where the
streamer reads through gcsfuse's file cache: its ranks read every file's header first, and the cache downloads each
object whole on that first read, so every node fetches the whole checkpoint (the GKE SGLang stacks; independent review
of issue 36, MAJOR-1). A DEP decode group splits it over all its nodes, as its engines load as one process group."""

WHOLE_COPY_PER_NODE = {"gcp-a4-sglang", "gcp-a4x-sglang"}


def test_each_node_of_a_multi_node_replica_reads_its_share_or_the_plan_says_whole() -> None:
    assert sorted(SHIPPED) == sorted(STACKS)
    for stack, shipped in SHIPPED.items():
        s = plan(stack).config.sizing
        total = _checkpoint(stack)
        if isinstance(shipped, dict):
            assert s.topology is not None
            roles = {r.name: (r.load_bytes_per_node, Fraction(1, r.nodes)) for r in s.topology.roles}
            assert roles == {n: (math.ceil(total * share), share) for n, share in shipped.items()}, stack
            continue
        split = Fraction(1) if stack in WHOLE_COPY_PER_NODE else Fraction(1, s.nodes)
        assert (s.load.bytes_per_node, shipped) == (math.ceil(total * shipped), split), stack


def test_the_streamer_splits_across_nodes_by_whole_files_only_through_a_mount() -> None:
    env = {stack: {e["name"]: e["value"] for e in next(_servers(stack, ()))[1].get("env", [])
                   if e["name"].startswith("RUNAI_STREAMER_") and e["name"] not in (
                       "RUNAI_STREAMER_MEMORY_LIMIT", "RUNAI_STREAMER_CONCURRENCY",
                       "RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING")}
           for stack in ("azure-gb300", "kubernetes-gb300-nvl72", "kubernetes-b300", "gcp-a4-sglang", "gcp-a4x-sglang")}
    assert env == {
        "azure-gb300": {"RUNAI_STREAMER_DIST_GLOBAL": "1"},  # az://: tensor ranges balance best
        "kubernetes-gb300-nvl72": {"RUNAI_STREAMER_DIST_GLOBAL": "1"},
        "kubernetes-b300": {},  # one node: the local group is the replica
        "gcp-a4-sglang": {"RUNAI_STREAMER_DIST_GLOBAL": "1", "RUNAI_STREAMER_PARTITION_POLICY": "files"},
        "gcp-a4x-sglang": {"RUNAI_STREAMER_DIST_GLOBAL": "1", "RUNAI_STREAMER_PARTITION_POLICY": "files"},
    }


STREAMER_MEMORY = {"azure-gb300": (4, 25), "kubernetes-b300": (8, 29), "kubernetes-gb300-nvl72": (4, 27),
                   "gcp-a4-sglang": (8, 32), "gcp-a4x-sglang": (4, 25)}
"""(ranks on a node, GiB a rank): an eighth of the node's memory over its ranks, at most 000's 32 GiB a rank."""


@pytest.mark.parametrize("stack", sorted(STREAMER_MEMORY))
def test_the_streamer_memory_limit_is_the_node_total(stack: str) -> None:
    """runai-model-streamer 0.17.1 reads RUNAI_STREAMER_MEMORY_LIMIT as the node's total and gives each distributed
    rank its part (distributed_streamer.py rank_memory_limit): the stacks set the sum of their ranks' buffers."""
    ranks, gib = STREAMER_MEMORY[stack]
    p = plan(stack)
    a = p.config.accelerator
    assert (a.gpus_per_node, gib) == (ranks, min(32, int(a.host_memory_gib / 8 // ranks)))
    for _, container, _ in _servers(stack, ()):
        extra = json.loads(_flag(_words(container), "--model-loader-extra-config").strip("'"))  # type: ignore[union-attr]
        assert extra["memory_limit"] == ranks * gib * 2**30 == p.config.sizing.load.streamer_memory_limit
        env = {e["name"]: e["value"] for e in container.get("env", [])}
        assert env.get("RUNAI_STREAMER_MEMORY_LIMIT", str(extra["memory_limit"])) == str(extra["memory_limit"])


def test_a_split_over_the_pod_network_shares_the_front_end_nic() -> None:
    """Pipeline stages over an existing cluster's pod network: the other node's half reaches each node over the same
    NIC that reads the bucket, so the NIC term is half the NIC."""
    terms = dict(plan("kubernetes-gb300-nvl72", "tensorParallel=4").config.sizing.load.terms)
    assert terms["the node's front-end NIC 100 Gbps x 1/2 (the other nodes' part of the checkpoint reaches the node "
                 "over it too: no NVLink or RDMA between the pods)"] == 50
    assert "the node's front-end NIC 100 Gbps" in dict(plan("kubernetes-gb300-nvl72").config.sizing.load.terms)
