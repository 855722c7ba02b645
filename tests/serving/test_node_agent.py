"""Issue 40 in serving: the node agent on every GPU node where the stack keeps the weights or the engine's caches,
and the server pod's choice between the node copy and the bucket (marker_wait, pod_template)."""

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from k3infra import offline
from k3infra.serving.marker_wait import CHOOSE_WEIGHTS, NODE_CHOICE, RUN_MOUNT
from k3infra.serving.node_agent import CACHE_MOUNT, NODE_MOUNT
from k3infra.serving.pod_template import ENGINE_CACHE_MOUNT
from k3infra.weightcopy.copier.caches import cache_key
from tests.support import plan

GKE_DIR = "/mnt/stateful_partition/kube-ephemeral-ssd/k3infra"


def _agent_parts(stack: str) -> dict[str, str]:
    """The cache key's parts the node agent is given (its one ``--cache``): the server's flag must name the same key."""
    [parts] = _agent_caches(stack)
    return parts


def _agent_caches(stack: str) -> list[dict[str, str]]:
    """Every key's parts the node agent carries (``--cache``)."""
    agent = _agent(stack)
    assert agent is not None
    args = agent["spec"]["template"]["spec"]["containers"][0]["args"]
    return [json.loads(args[i + 1]) for i, a in enumerate(args) if a == "--cache"]


def _agent(stack: str, *sets: str) -> dict[str, Any] | None:
    rec = plan(stack, *sets).recording
    found = [r for r in rec.resources if r.type == "kubernetes:apps/v1:DaemonSet" and r.name.endswith("node-agent-daemon-set")]
    return offline.unwrap(found[0].inputs) if found else None


def _leader(stack: str, *sets: str) -> dict[str, Any]:
    rec = plan(stack, *sets).recording
    lws = [r for r in rec.resources if r.type.endswith("LeaderWorkerSet")]
    return offline.unwrap(lws[0].inputs)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]


def test_the_agent_keeps_weights_and_caches_on_every_gke_gpu_node_as_the_writer() -> None:
    ds = _agent("gcp-a4xmax")
    assert ds is not None
    spec = ds["spec"]["template"]["spec"]
    prepull = offline.unwrap(plan("gcp-a4xmax").recording.one("kubernetes:apps/v1:DaemonSet",
                                                               "k3-pre-pull-daemon-set").inputs)["spec"]["template"]["spec"]
    # the same nodes as the image pre-pull: every node the scaler may put a replica on
    assert (spec["nodeSelector"], spec["tolerations"]) == (prepull["nodeSelector"], prepull["tolerations"])
    assert spec["serviceAccountName"] == "k3-weight-sync"
    [c] = spec["containers"]
    args = c["args"]
    assert args[:3] == ["node-agent", "--repo", "moonshotai/Kimi-K3@main=gs://my-project-kimi-k3-weights/models/"
                                                "moonshotai/Kimi-K3"]
    assert args[args.index("--node-dir") + 1] == NODE_MOUNT and args[args.index("--cache-dir") + 1] == CACHE_MOUNT
    assert [json.loads(args[i + 1]) for i, a in enumerate(args) if a == "--cache"] == [{
        "engine": "vllm-0.33.0", "gpu": "GB300", "image": "us-central1-docker.pkg.dev/my-project/k3/vllm-openai:kimi-k3-arm64",
        "layout": "tp8-pp1-ep1-nodes2"}]
    # the engine cache's root: the server's directory of its key lies under it
    host = {v["name"]: v["hostPath"] for v in spec["volumes"] if "hostPath" in v}
    assert host == {"node-weights": {"path": GKE_DIR, "type": "DirectoryOrCreate"},
                    "engine-cache": {"path": f"{GKE_DIR}/engine-cache", "type": "DirectoryOrCreate"}}
    server = {v["name"]: v["hostPath"] for v in _leader("gcp-a4xmax")["volumes"] if "hostPath" in v}
    assert server["engine-cache"]["path"] == f"{GKE_DIR}/engine-cache/{cache_key(_agent_parts('gcp-a4xmax'))}"


def test_each_role_of_a_topology_has_its_own_caches_and_the_agent_carries_every_role_s() -> None:
    """A prefill's and a decode's engines compile different graphs and rank differently: one key each, one node
    directory each, and the agent saves and restores both (review of issue 40's last read)."""
    rec = plan("gcp-a4xmax-pd").recording
    caches = _agent_caches("gcp-a4xmax-pd")
    assert sorted((c["role"], c["layout"]) for c in caches) == sorted(
        (r.name, f"tp{r.tensor_parallel}-dp{r.data_parallel}-ep{r.expert_parallel}-nodes{r.nodes}")
        for r in plan("gcp-a4xmax-pd").config.sizing.topology.roles)  # type: ignore[union-attr]
    keys = {c["role"]: cache_key(c) for c in caches}
    assert len(set(keys.values())) == len(keys) == 2
    for lws in (r for r in rec.resources if r.type.endswith("LeaderWorkerSet")):
        spec = offline.unwrap(lws.inputs)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
        role = offline.unwrap(lws.inputs)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["metadata"]["labels"][
            "llm-d.ai/role"]
        [cache] = [v["hostPath"]["path"] for v in spec["volumes"] if v["name"] == "engine-cache"]
        assert cache == f"{GKE_DIR}/engine-cache/{keys[role]}"
        script = spec["containers"][0]["args"][0]
        assert f'printf %s "{keys[role]} rank=$r"' in script


def test_the_server_chooses_the_node_copy_through_the_mount_and_the_engine_loads_it() -> None:
    spec = _leader("gcp-a4xmax")
    wait = spec["initContainers"][0]
    env = {e["name"]: e["value"] for e in wait["env"]}
    assert env == {"K3_NODE_MARKER": f"{NODE_MOUNT}/weights/models/moonshotai/Kimi-K3/.k3infra/complete-main.json",
                   "K3_BUCKET_MARKER": "/mnt/models/models/moonshotai/Kimi-K3/.k3infra/complete-main.json",
                   "K3_CHOICE": NODE_CHOICE}
    assert "cmp -s" in wait["command"][2]
    engine = spec["containers"][0]
    script = engine["args"][0].splitlines()
    key = cache_key(_agent_parts("gcp-a4xmax"))
    assert CHOOSE_WEIGHTS in script and [ln for ln in script if ".k3infra-warm" in ln] == [
        f"rm -f {ENGINE_CACHE_MOUNT}/.k3infra-warm; (r=${{LWS_WORKER_INDEX:-${{POD_INDEX:-0}}}}; h=127.0.0.1; "
        "[ \"$r\" = 0 ] || h=${LWS_LEADER_ADDRESS}; until python3 -c \"import urllib.request as u; "
        "u.urlopen('http://$h:8000/health', timeout=5)\" 2>/dev/null; do sleep 30; done; "
        f"printf %s \"{key} rank=$r\" > {ENGINE_CACHE_MOUNT}/.k3infra-warm) &"]
    mounts = {m["name"]: m for m in engine["volumeMounts"]}
    assert mounts["node-weights"] == {"name": "node-weights", "mountPath": NODE_MOUNT, "readOnly": True}
    assert mounts["engine-cache"]["mountPath"] == ENGINE_CACHE_MOUNT


def test_the_copier_s_wait_chooses_where_the_loader_reads_the_bucket_itself() -> None:
    """The streamer on an existing cluster with a stated directory: the copier's wait chooses (it reads both
    markers and checks every file's size against the manifest)."""
    stated = "kubernetes.nodeLocalPath=/raid/k3infra"
    rec = plan("kubernetes-b300", stated).recording
    pod = offline.unwrap(rec.one("kubernetes:apps/v1:Deployment", "k3-server-workload").inputs)["spec"]["template"]["spec"]
    wait = pod["initContainers"][0]
    assert wait["args"][-4:] == ["--node-dir", NODE_MOUNT, "--choice-file", NODE_CHOICE]
    assert {m["name"] for m in wait["volumeMounts"]} >= {"node-weights", "k3infra-run"}
    assert {"name": "node-weights", "hostPath": {"path": "/raid/k3infra", "type": "DirectoryOrCreate"}} in pod["volumes"]
    ns = offline.unwrap(rec.one("kubernetes:core/v1:Namespace", "k3-namespace").inputs)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    agent = _agent("kubernetes-b300", stated)
    assert agent is not None and "--cache-dir" not in agent["spec"]["template"]["spec"]["containers"][0]["args"]
    eks = _agent("aws-eks", "nodeWeights=true")
    assert eks is not None and {"name": "node-weights", "hostPath": {"path": "/mnt/k8s-disks/0/k3infra", "type":
                                "DirectoryOrCreate"}} in eks["spec"]["template"]["spec"]["volumes"]


def test_no_agent_where_nothing_is_kept_and_eks_stays_baseline_by_default() -> None:
    assert _agent("aws-eks") is None and _agent("kubernetes-b300") is None and _agent("alicloud-ack") is None
    ns = offline.unwrap(plan("aws-eks").recording.one("kubernetes:core/v1:Namespace", "k3-namespace").inputs)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    azure = _agent("azure-gb300")  # AKS keeps no weights on the node, but carries the caches
    assert azure is not None and "--node-dir" not in azure["spec"]["template"]["spec"]["containers"][0]["args"]


def test_the_mount_wait_chooses_the_node_copy_only_when_its_marker_is_the_bucket_s(tmp_path: Any) -> None:
    import subprocess

    from k3infra.serving.marker_wait import MOUNT_WAIT_SCRIPT, NODE_CHOICE_SCRIPT

    bucket = tmp_path / "mnt" / "m" / ".k3infra" / "complete-main.json"
    node = tmp_path / "node" / "weights" / "m" / ".k3infra" / "complete-main.json"
    choice = tmp_path / "choice"
    for p in (bucket, node):
        p.parent.mkdir(parents=True)
    bucket.write_text('{"manifestSha256": "a"}')

    def run() -> str:
        env = {"PATH": "/usr/bin:/bin", "K3_NODE_MARKER": str(node), "K3_BUCKET_MARKER": str(bucket),
               "K3_CHOICE": str(choice)}
        done = subprocess.run(["/bin/sh", "-c", MOUNT_WAIT_SCRIPT + NODE_CHOICE_SCRIPT, "wait-for-weights", "5", "0.1",
                               str(bucket)], env=env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return choice.read_text()

    assert run() == ""  # no node copy
    node.write_text('{"manifestSha256": "b"}')
    assert run() == ""  # another revision
    node.write_text(bucket.read_text())
    assert run() == f"{tmp_path / 'node' / 'weights' / 'm'}\n"


@pytest.mark.parametrize("chosen, bucket, loads", [
    ("/var/lib/k3infra-node/weights/m", "/mnt/models/m", "/var/lib/k3infra-node/weights/m"),
    ("", "/mnt/models/m", "/mnt/models/m"),
])
def test_the_engine_loads_through_one_path_wherever_the_weights_are(tmp_path: Path, chosen: str, bucket: str,
                                                                    loads: str) -> None:
    """vLLM's compile cache key hashes the model path as given: a first warm-up from the bucket's mount and a restart
    from the node copy must name the same path (the link), which points at what was chosen."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "weights").write_text(chosen)
    script = CHOOSE_WEIGHTS.replace(RUN_MOUNT, str(run))
    out = subprocess.run(["bash", "-c", f'K3_MODEL={bucket}; {script}; printf %s "$K3_MODEL"'],
                         capture_output=True, text=True, check=True).stdout
    assert out == str(run / "model") and os.readlink(run / "model") == loads


def test_a_model_in_the_bucket_by_uri_is_loaded_by_its_uri(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "weights").write_text("")
    script = CHOOSE_WEIGHTS.replace(RUN_MOUNT, str(run))
    out = subprocess.run(["bash", "-c", f'K3_MODEL=s3://b/m; {script}; printf %s "$K3_MODEL"'],
                         capture_output=True, text=True, check=True).stdout
    assert out == "s3://b/m" and not (run / "model").exists()


@pytest.mark.parametrize("env, rank", [({"LWS_WORKER_INDEX": "1"}, 1), ({"POD_INDEX": "2"}, 2), ({}, 0)])
def test_a_pod_marks_its_rank_once_its_group_s_leader_answers_and_the_agent_saves_that_rank(
        tmp_path: Path, env: dict[str, str], rank: int) -> None:
    """The engine container's flag (serving) and the agent's reading of it (copier.caches) agree: a worker writes
    its rank once the leader's /health answers, a stale flag is gone at start."""
    import http.server
    import threading

    from k3infra.catalog import EngineName
    from k3infra.catalog.engines import ENGINES
    from k3infra.serving.pod_template import warm_flag_command
    from k3infra.weightcopy.copier import caches

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        cache = tmp_path / "cache"
        cache.mkdir()
        (cache / caches.WARM_FLAG).write_text("an older image's key rank=0")
        engine = ENGINES[EngineName.VLLM]
        script = (warm_flag_command(engine, "k3-key", "127.0.0.1").replace(ENGINE_CACHE_MOUNT, str(cache))
                  .replace(f":{engine.port}{engine.health_path}", f":{server.server_port}/"))
        subprocess.run(["bash", "-c", f"{script} wait"], env={"PATH": os.environ["PATH"], **env}, check=True,
                       timeout=60)
        assert caches._flag_rank(cache / caches.WARM_FLAG, "k3-key") == rank
        assert caches._flag_rank(cache / caches.WARM_FLAG, "k3-other-key") is None
    finally:
        server.shutdown()
