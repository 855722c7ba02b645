"""Every stack's timeouts against the pessimistic estimates they derive from (issue 18), one test per stack:

- the sync Job's await (annotation and custom timeout) and the server's wait for the completion marker cover the
  pessimistic sync estimate (catalog.transfer figures, their low ends);
- every start-up probe covers the load at the loader's pessimistic bandwidth plus warm-up; every deployment
  deadline (Pulumi's await, HyperPod's maxDeployTimeInSeconds, PAI-EAS's create timeout) covers the probe;
- no stack renders a volume the size of the model for the copy;
- the plan prints the sync estimate next to the load estimate.
"""

import json
from typing import Any, Iterator

import pytest

from k3infra import offline
from k3infra.catalog import GB
from k3infra.catalog.transfer import (
    BUCKET_INGRESS,
    CPU_NODES,
    DEFAULT_CPU_NODE,
    GRANT_PROPAGATION,
    HUB_STREAM,
    SYNC_STREAMS_PER_WORKER,
)
from k3infra.catalog.types import Cloud
from k3infra.offline import Registration
from k3infra.policy_rules import probe_budget
from k3infra.sizing import Sizing
from k3infra.weightcopy.copier import sync as copier_sync
from tests.support import STACKS, plan

SERVER_KINDS = ("LeaderWorkerSet", "StatefulSet", "Deployment")


def seconds(timeout: str) -> int:
    assert timeout.endswith("s"), timeout
    return int(timeout[:-1])


def pod_templates(r: Registration) -> Iterator[dict[str, Any]]:
    spec = offline.unwrap(r.inputs)["spec"]
    if r.type.endswith("LeaderWorkerSet"):
        yield spec["leaderWorkerTemplate"]["leaderTemplate"]
        yield spec["leaderWorkerTemplate"]["workerTemplate"]
    else:
        yield spec["template"]


def load_and_warmup(s: Sizing) -> int:
    return s.load.seconds + s.engine.warmup_seconds


@pytest.mark.parametrize("stack", STACKS)
def test_every_timeout_covers_the_pessimistic_estimate(stack: str) -> None:
    p = plan(stack)
    s, rec = p.config.sizing, p.recording
    checked: list[str] = []
    if p.config.weights.sync:
        assert s.sync is not None
        job = rec.one("kubernetes:batch/v1:Job", "k3-sync-job")
        annotations = job.inputs["metadata"]["annotations"]
        assert int(annotations["pulumi.com/timeoutSeconds"]) == s.sync.timeout_seconds >= s.sync.seconds
        assert seconds(job.custom_timeouts["create"]) == seconds(job.custom_timeouts["update"]) >= s.sync.seconds
        checked.append("sync Job")
    else:
        assert s.sync is None
    for r in rec.resources:
        kind = r.type.rsplit(":", 1)[-1]
        if kind in SERVER_KINDS and r.parent_type == "k3infra:index:ModelServer":
            await_s = int(r.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"])
            assert seconds(r.custom_timeouts["create"]) == await_s >= s.probe_budget_seconds
            for tmpl in pod_templates(r):
                engine = next(c for c in tmpl["spec"]["containers"] if c["name"] == "engine")
                if "startupProbe" in engine:
                    assert probe_budget(engine["startupProbe"]) >= load_and_warmup(s), stack
                    checked.append(f"{kind} start-up probe")
                waits = [c for c in tmpl["spec"].get("initContainers", []) if c["name"] == "wait-for-weights"]
                if p.config.weights.sync:
                    (wait,) = waits
                    # The copier's ``wait --timeout T``, or the mount wait's ``sh -c SCRIPT NAME T ...``.
                    given = (wait["args"][wait["args"].index("--timeout") + 1] if "args" in wait
                             else wait["command"][4])
                    assert s.sync is not None and int(given) >= s.sync.seconds
                    checked.append("marker wait")
                else:
                    assert not waits
        if kind == "InferenceEndpointConfig":
            spec = offline.unwrap(r.inputs)["spec"]
            # The operator's deadline covers its copy from S3 (bucket-copy: load.seconds includes it) and warm-up.
            assert spec["maxDeployTimeInSeconds"] >= s.probe_budget_seconds >= load_and_warmup(s)
            assert probe_budget(spec["worker"]["probes"]["startupProbe"]) >= load_and_warmup(s)
            assert int(r.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) >= spec["maxDeployTimeInSeconds"]
            checked.append("HyperPod deploy time")
        if r.type == "alicloud:pai/service:Service":
            config = json.loads(offline.unwrap(r.inputs)["serviceConfig"])
            startup = config["containers"][0]["startup_check"]
            budget = startup["failure_threshold"] * startup["period_seconds"] + startup["initial_delay_seconds"]
            assert budget >= load_and_warmup(s)
            assert seconds(r.custom_timeouts["create"]) >= budget
            checked.append("PAI-EAS deploy time")
    assert checked, f"{stack}: no timeout found to check"


@pytest.mark.parametrize("stack", STACKS)
def test_no_stack_renders_a_volume_the_size_of_the_model_for_the_copy(stack: str) -> None:
    rec = plan(stack).recording
    assert not [r.name for r in rec.resources if r.type.endswith("PersistentVolumeClaim") and "sync" in r.name]
    for job in rec.by_type("kubernetes:batch/v1:Job"):
        if job.parent_type != "k3infra:index:WeightSync":
            continue  # the verify Job (observability) copies nothing
        spec = offline.unwrap(job.inputs)["spec"]
        assert spec["completionMode"] == "Indexed"
        for v in spec["template"]["spec"]["volumes"]:
            assert set(v) <= {"name", "configMap", "emptyDir"}, v
            if "emptyDir" in v:
                assert v["emptyDir"]["sizeLimit"] == "2Gi"


@pytest.mark.parametrize("stack", STACKS)
def test_the_plan_prints_the_sync_estimate_next_to_the_load(stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from k3infra import cli

    console = Console(record=True, width=400)
    monkeypatch.setattr(cli, "out", console)
    cli._print_plan(plan(stack))
    out = console.export_text()
    rows = [line for line in out.splitlines() if line.startswith("│ load ") or line.startswith("│ sync ")]
    assert [r.split()[1] for r in rows] == ["load", "sync"], out
    s = plan(stack).config.sizing
    if s.sync is not None:
        assert f"{s.sync.gbps:g} Gbps" in rows[1] and "Pulumi waits" in rows[1]
    else:
        assert "weights.sync false" in rows[1]
    as_json = s.as_dict()
    assert "sync" in as_json and as_json["load"]["seconds"] == s.load.seconds


def test_the_sync_estimate_is_the_pessimistic_end_of_the_stated_figures() -> None:
    """alicloud-ack, the one cloud stack syncing on its system nodes (OSS's account ingress is below what they carry,
    so no sync pool): 2 workers on 2 ecs.g7.2xlarge (3-10 Gbps), 4 streams each at 0.8-4 Gbps from the Hub, into
    OSS at 5-10 Gbps an account."""
    s = plan("alicloud-ack").config.sizing.sync
    assert s is not None and not s.pool
    node = CPU_NODES[DEFAULT_CPU_NODE[s.node.cloud]]
    assert s.node == node and (s.workers, s.nodes) == (2, 2)
    assert s.streams == SYNC_STREAMS_PER_WORKER == copier_sync.DEFAULT_STREAMS
    low = min(2 * s.streams * HUB_STREAM.low, 2 * node.nic.low, BUCKET_INGRESS[node.cloud].low)
    assert s.gbps == low == 5
    assert s.limit == "bucket ingress 5 Gbps"
    # the busiest worker: half of 1,560 GB plus one largest file (1/64 of the checkpoint)
    assert s.bytes_per_worker == 780 * GB + 1560 * GB // 64
    # the longer of start-up and the window a refused authorization is retried in (300 s; the grant exists before
    # the Job), then the bytes at the worker's share of the limit
    assert s.seconds == max(180, 300) + -(-s.bytes_per_worker * 8 // int(low / 2 * 1e9))
    assert GRANT_PROPAGATION[Cloud.ALICLOUD].source in s.sources
    assert s.optimistic_seconds < s.seconds < s.timeout_seconds


def test_the_catalog_names_every_clouds_default_cpu_node() -> None:
    from k3infra.alicloud.cluster import DEFAULT_SYSTEM_NODE_TYPE as ALI
    from k3infra.aws.cluster import DEFAULT_SYSTEM_NODE_TYPE as AWS
    from k3infra.azure.cluster import DEFAULT_SYSTEM_VM_SIZE as AZURE
    from k3infra.catalog.transfer import EXISTING_CPU_NODE
    from k3infra.gcp.cluster import DEFAULT_SYSTEM_MACHINE_TYPE as GCP

    assert sorted(DEFAULT_CPU_NODE.values()) == sorted([ALI, AWS, AZURE, GCP, EXISTING_CPU_NODE])
    for sku in DEFAULT_CPU_NODE.values():
        assert CPU_NODES[sku].nic.low <= CPU_NODES[sku].nic.high and CPU_NODES[sku].nic.source


@pytest.mark.parametrize("stack", STACKS)
def test_the_copier_waits_out_the_clouds_stated_grant_propagation_and_the_sync_budget_covers_it(stack: str) -> None:
    """Azure role assignments "up to 10 minutes", GCP IAM "potentially 7 minutes", AWS and Alibaba an ESTIMATE."""
    p = plan(stack)
    if not p.config.weights.sync:
        return
    window = GRANT_PROPAGATION[p.config.cloud].seconds
    assert window == {Cloud.AZURE: 600, Cloud.GCP: 420, Cloud.AWS: 300, Cloud.ALICLOUD: 300,
                      Cloud.KUBERNETES: 60}[p.config.cloud]
    job = offline.unwrap(p.recording.one("kubernetes:batch/v1:Job", "k3-sync-job").inputs)
    (copy,) = job["spec"]["template"]["spec"]["containers"]
    assert copy["args"][copy["args"].index("--auth-window") + 1] == str(window)
    s = p.config.sizing.sync
    # the whole window is waited out before the bytes (the pool's node and the start-up run meanwhile)
    assert s is not None and s.seconds >= window + s.transfer_seconds
    for r in p.recording.resources:
        server = r.type.rsplit(":", 1)[-1] in SERVER_KINDS and r.parent_type == "k3infra:index:ModelServer"
        for tmpl in pod_templates(r) if server else ():
            for wait in (c for c in tmpl["spec"].get("initContainers", []) if c["name"] == "wait-for-weights"):
                if "args" in wait:  # the copier reads the bucket as the reader: it waits out the reader's grant
                    assert wait["args"][wait["args"].index("--auth-window") + 1] == str(window)


@pytest.mark.parametrize("stack", STACKS)
def test_the_sync_workers_hold_the_streams_the_sizing_counts_on(stack: str) -> None:
    """Each worker runs ``--streams`` of the sizing, with the memory their parts take (4 x 64 MiB a stream)."""
    p = plan(stack)
    s = p.config.sizing.sync
    if s is None:
        return
    job = offline.unwrap(p.recording.one("kubernetes:batch/v1:Job", "k3-sync-job").inputs)
    container = job["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert args[args.index("--streams") + 1] == str(s.streams)
    memory = f"{s.streams * 4 * 64 + 2048}Mi"
    cpu = -(-s.streams // 8)
    assert container["resources"] == {"requests": {"cpu": str(cpu), "memory": memory},
                                      "limits": {"cpu": str(max(4, 2 * cpu)), "memory": memory}}


@pytest.mark.parametrize("stack", STACKS)
def test_the_image_pre_pull_waits_the_pessimistic_pull(stack: str) -> None:
    """The pre-pull DaemonSet's await covers 1.5 x the image pull plus scheduling; it waits for the pool only."""
    from k3infra.serving.prepull import timeout_seconds
    from k3infra.sizing import IMAGE_PULL_SECONDS, SCHEDULING_SECONDS

    p = plan(stack)
    found = [r for r in p.recording.resources
             if r.type == "kubernetes:apps/v1:DaemonSet" and r.name.endswith("pre-pull-daemon-set")]
    if not p.config.sizing.cold_start.image_pre_pulled:
        assert not found
        return
    (ds,) = found
    assert timeout_seconds() == 600 >= 1.5 * IMAGE_PULL_SECONDS + SCHEDULING_SECONDS
    assert seconds(ds.custom_timeouts["create"]) == timeout_seconds()
    assert int(offline.unwrap(ds.inputs)["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) == timeout_seconds()
