"""How the ranks of one replica split the checkpoint's reads between its nodes, per load format, at the pinned versions.

What a node fetches from the bucket is not always its share of the checkpoint:

- ``runai_streamer`` (vLLM 0.33.0 and SGLang 0.5.23 alike, through runai-model-streamer): without ``distributed``
  every rank streams the whole checkpoint itself. With it, the streamer splits the reads among a group of ranks and
  broadcasts each range to the rest of the group. The group is the ranks of ONE NODE unless
  ``RUNAI_STREAMER_DIST_GLOBAL=1``, which makes it every rank of the process group (the replica's, on all its nodes):
  "In local mode, the processes on each node divide the entire workload among themselves. In global mode, the
  workload is divided between all the processes on all the nodes [...] By default, distributed streaming is done in
  local mode" (run-ai/runai-model-streamer docs/src/usage.md, "Global and local modes"; source:
  distributed_streamer.py ``create_distribution_group``, in 0.15.7 and 0.17.1 alike). So a replica on N nodes in
  local mode reads the checkpoint N times over. The ranks split it by ``RUNAI_STREAMER_PARTITION_POLICY``: by
  tensor ranges (0.15.7's ``chunks``, 0.17.1's ``spans``), which touch every file from every node, or by whole
  files (``files``, in both).
- ``fastsafetensors`` (vLLM 0.33.0 model_executor/model_loader/weight_utils.py ``fastsafetensors_weights_iterator``):
  the files in groups of the WORLD process group's size, one whole file per rank, broadcast to the others: each node
  reads its ranks' files.
- the other formats (``safetensors``, ``auto``): every rank reads every tensor it loads; the node's page cache serves
  its ranks one copy (ESTIMATE: the pessimistic end would be a copy per rank).

A FUSE client that downloads each object it is asked for whole (gcsfuse's file cache, catalog.loaders.READ_PATHS
``whole_objects``) fetches every file any of the node's ranks touches. The streamer's ranks touch every file before
any split: each reads the safetensors header of every file itself (runai-model-streamer 0.17.1
safetensors_streamer.py: "metadata is created on cpu and each process reads it individually", and
safetensors_pytorch.py ``from_files`` reads 8 bytes at offset 0 then the header of every path; 0.15.7 the same), and
gcsfuse's file cache downloads the whole object on a first read at offset 0 whatever ``cache-file-for-range-read``
says (GoogleCloudPlatform/gcsfuse internal/cache/file/cache_handler.go: only a read at a non-zero offset skips the
cache when that option is false; downloader/job.go fetches up to the object's size). So over that mount every node
fetches the whole checkpoint, whatever the partition policy (independent review of issue 36, MAJOR-1): k3infra still
splits by whole files there, which keeps the ranks' reads apart, and sizes a whole copy per node.

The received part of a split across nodes travels over the process group's transport: NVLink or the RDMA fabric, or
the node's front-end network where the pods have neither (then it shares the NIC with the bucket's reads,
sizing.load_estimate).
"""

import math
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from types import MappingProxyType
from typing import Mapping

STREAMER_REQUIREMENT = ">=0.15.7"
"""What the pinned engines require of runai-model-streamer: vllm 0.33.0 and sglang 0.5.23 wheels' METADATA, extra ``runai``:
``runai-model-streamer[azure,gcs,s3]>=0.15.7`` (neither pins it: the image's build resolves it)."""
STREAMER_RELEASE = "0.17.1"
"""The newest runai-model-streamer on PyPI when checked: what an engine image built now resolves ``>=0.15.7`` to, and
the release whose source the memory limit below follows (catalog.loaders.streamer_memory_limit). The distribution
settings k3infra sets (``RUNAI_STREAMER_DIST_GLOBAL``, the ``files`` partition policy) mean the same in 0.15.7."""

STREAMER_GLOBAL_ENV = "RUNAI_STREAMER_DIST_GLOBAL"
"""``1``: the distributed streamer's group is every rank of the process group, not one node's (module docstring)."""
STREAMER_PARTITION_ENV = "RUNAI_STREAMER_PARTITION_POLICY"
"""How the distributed streamer splits the reads among its group (partition.py ``get_partition_policy``: ``files``,
``chunks`` and, from 0.17, ``spans``, the default there; 0.15.7's default is ``chunks`` and it knows no ``spans``)."""
WHOLE_FILES_POLICY = "files"
"""The policy that gives each rank whole files (partition.py ``partition_by_files``, in 0.15.7 and 0.17.1)."""

STREAMER_FORMAT = "runai_streamer"
STREAMING_FORMATS = frozenset({"fastsafetensors", STREAMER_FORMAT})
"""Load formats that keep a file per rank in flight (catalog.loaders.files_in_flight)."""


class Split(StrEnum):
    """Who splits one copy of the checkpoint's reads."""

    RANK = "rank"
    """Nobody: every rank reads the whole checkpoint (the streamer without ``distributed``)."""
    NODE = "node"
    """The ranks of each node: every node reads the whole checkpoint."""
    REPLICA = "replica"
    """Every rank of the replica, on all its nodes: each node reads its ranks' part."""


@dataclass(frozen=True)
class ReadSplit:
    """How one load format, with its settings, splits the reads."""

    split: Split
    whole_files: bool
    """Each rank reads whole files (so a client caching whole objects fetches only its node's files)."""
    statement: str
    """Why, from the pinned source."""
    header_pass: bool = False
    """Every rank reads the header of every file before the split (the streamer's metadata pass): a client that
    downloads whole objects on a first read fetches every file on every node."""


FORMAT_SPLITS: Mapping[str, ReadSplit] = MappingProxyType({
    "fastsafetensors": ReadSplit(Split.REPLICA, True, "vllm 0.33.0 weight_utils.py fastsafetensors_weights_iterator: "
                                 "one whole file per rank of the WORLD group, broadcast to the others"),
})
"""The formats whose split needs no setting."""


def read_split(load_format: str, *, distributed: bool, env: Mapping[str, str]) -> ReadSplit:
    """The split of ``load_format`` with the streamer's ``distributed`` extra config and the container's ``env``
    (module docstring)."""
    if load_format in FORMAT_SPLITS:
        return FORMAT_SPLITS[load_format]
    if load_format != STREAMER_FORMAT:
        return ReadSplit(Split.NODE, False, f"{load_format}: every rank reads the tensors it loads from every file; the "
                         "node's page cache serves its ranks one copy (ESTIMATE)")
    if not distributed:
        return ReadSplit(Split.RANK, False, "runai_streamer without distributed: every rank streams every file")
    whole = env.get(STREAMER_PARTITION_ENV) == WHOLE_FILES_POLICY
    policy = f"{STREAMER_PARTITION_ENV}={env[STREAMER_PARTITION_ENV]}" if STREAMER_PARTITION_ENV in env else (
        "the default partition (tensor ranges)")
    if env.get(STREAMER_GLOBAL_ENV) == "1":
        return ReadSplit(Split.REPLICA, whole, f"runai_streamer distributed, {STREAMER_GLOBAL_ENV}=1 (global mode), "
                         f"{policy}", header_pass=True)
    return ReadSplit(Split.NODE, whole, f"runai_streamer distributed in local mode (no {STREAMER_GLOBAL_ENV}=1): the "
                     f"ranks of each node split the whole checkpoint, {policy}", header_pass=True)


def node_share(split: ReadSplit, nodes: int, ranks_per_node: int, whole_objects: bool) -> Fraction:
    """The part of the checkpoint one node fetches from the bucket: whole copies per rank, one copy, or 1/nodes;
    one copy where a client that caches whole objects serves ranks that touch every file (reading ranges of every
    file, or every file's header first)."""
    if split.split == Split.RANK:
        return Fraction(1 if whole_objects else max(1, ranks_per_node))
    if split.split == Split.NODE or nodes <= 1 or (whole_objects and (split.header_pass or not split.whole_files)):
        return Fraction(1)
    return Fraction(1, nodes)


def streamer_distributed(world_size: int) -> bool:
    """k3infra turns the streamer's ``distributed`` on for every replica of more than one rank: SGLang turns it on by
    itself only for object-store URLs (sglang 0.5.23 srt/model_loader/loader.py ``self._is_distributed =
    is_object_storage_path``), vLLM never (vllm 0.33.0 runai_streamer_loader.py, False unless configured), and without
    it every rank reads the whole checkpoint."""
    return world_size > 1


def streamer_env(nodes: int, on_mount: bool) -> dict[str, str]:
    """What k3infra sets for a distributed streamer: the global group where the replica spans nodes, split by whole
    files where the model is a mounted path (a FUSE client may fetch whole objects, gcsfuse's file cache does)."""
    if nodes <= 1:
        return {}
    return {STREAMER_GLOBAL_ENV: "1", **({STREAMER_PARTITION_ENV: WHOLE_FILES_POLICY} if on_mount else {})}


def fetched_bytes(total: int, share: Fraction) -> int:
    """Bytes one node fetches: ``share`` of ``total``, rounded up."""
    return math.ceil(total * share)


__all__ = ["FORMAT_SPLITS", "STREAMER_FORMAT", "STREAMER_GLOBAL_ENV", "STREAMER_PARTITION_ENV", "STREAMER_RELEASE",
           "STREAMER_REQUIREMENT", "STREAMING_FORMATS", "WHOLE_FILES_POLICY", "ReadSplit", "Split", "fetched_bytes",
           "node_share", "read_split", "streamer_distributed", "streamer_env"]
