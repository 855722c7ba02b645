"""The fabric check in the plans: every multi-node Kubernetes stack checks each replica's fabric on pods shaped and
claiming like its server's, before the server and beside the weight sync; the others plan none; the setting that
turns it off and its threshold."""

import json
from typing import Any

import pytest

from k3infra import offline
from k3infra.config import ConfigError
from k3infra.serving import fabric_check
from tests.support import ROOT, STACKS, plan

JOB = "kubernetes:batch/v1:Job"
CHECKED = {
    # stack: (nodes, GPUs per node, [(path, collective, ranks, transport between nodes, expected GB/s)])
    "alicloud-ack": (3, 8, [("tensor-parallel", "all_reduce", 8, "nvlink", 450.0),
                            ("pipeline", "all_reduce", 24, "socket", 21.25)]),
    "azure-gb300": (2, 4, [("tensor-parallel", "all_reduce", 8, "nvlink", 900.0)]),
    "gcp-a4-sglang": (2, 8, [("tensor-parallel", "all_reduce", 16, "rdma", 400.0)]),
    "gcp-a4x-sglang": (4, 4, [("tensor-parallel", "all_reduce", 16, "nvlink", 900.0)]),
    "gcp-a4xmax": (2, 4, [("tensor-parallel", "all_reduce", 8, "nvlink", 900.0)]),
    "kubernetes-gb300-nvl72": (2, 4, [("tensor-parallel", "all_reduce", 8, "nvlink", 900.0)]),
}


def unwrap(reg: Any) -> dict[str, Any]:
    return offline.unwrap(reg.inputs)


def check_job(stack: str, *sets: str) -> dict[str, Any]:
    return unwrap(plan(stack, *sets).recording.one(JOB, "k3-fabric-0-job"))


def server_pod(stack: str) -> dict[str, Any]:
    lws = unwrap(plan(stack).recording.one("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"))
    return lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]


def test_exactly_the_multi_node_kubernetes_stacks_check_their_fabric() -> None:
    checked = {s for s in STACKS if any(r.name.startswith("k3-fabric-") for r in plan(s).recording.by_type(JOB))}
    assert checked == set(CHECKED)


@pytest.mark.parametrize("stack", sorted(CHECKED))
def test_the_check_runs_the_planned_paths_on_one_pod_per_node(stack: str) -> None:
    nodes, gpus, paths = CHECKED[stack]
    job = check_job(stack)
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (
        "Indexed", nodes, nodes, 0)
    (c,) = spec["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    probe_plan = json.loads(env["K3_FABRIC_PLAN"])
    assert (probe_plan["gpusPerNode"], probe_plan["threshold"]) == (gpus, 0.5)
    assert [(p["name"], p["collective"], len(p["ranks"]), p["expect"], p["expectedBusbwGBs"])
            for p in probe_plan["paths"]] == paths
    assert env["LWS_LEADER_ADDRESS"] == "k3-fabric-0-0.k3-fabric-0.kimi-k3.svc.cluster.local"
    assert env["LWS_GROUP_SIZE"] == str(nodes)
    assert c["args"][0].splitlines()[-1] == (
        f"exec python3 -m torch.distributed.run --nnodes=$LWS_GROUP_SIZE --nproc-per-node={gpus} "
        "--node-rank=$LWS_WORKER_INDEX --master-addr=$LWS_LEADER_ADDRESS --master-port=29511 "
        '/opt/k3infra-fabric/fabric_probe.py --plan "$K3_FABRIC_PLAN"')
    code = unwrap(plan(stack).recording.one("kubernetes:core/v1:ConfigMap", "k3-fabric-code"))
    assert code["data"] == {"fabric_probe.py": (ROOT / "k3infra/fabric_probe.py").read_text()}
    out = plan(stack).recording.outputs["fabricCheck"]
    assert [p["name"] for p in out["paths"]] == [p[0] for p in paths] and out["threshold"] == 0.5


@pytest.mark.parametrize("stack", sorted(CHECKED))
def test_the_check_pods_are_the_server_pods_on_the_fabric(stack: str) -> None:
    """Same image, nodes, affinity domain, GPUs and fabric resources, claim shapes, capabilities, host mounts,
    annotations and NCCL environment as the server's leader."""
    pod, server = check_job(stack)["spec"]["template"]["spec"], server_pod(stack)
    (c,), s = pod["containers"], server["containers"][0]
    assert c["image"] == s["image"]
    for key in ("nodeSelector", "tolerations", "securityContext"):
        assert pod.get(key) == server.get(key), key
    assert c["securityContext"] == s["securityContext"]
    def fabric(r: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in r.items() if k not in ("cpu", "memory")}
    assert fabric(c["resources"]["limits"]) == fabric(s["resources"]["limits"])
    assert c["resources"].get("claims") == s["resources"].get("claims")
    terms = [t["topologyKey"] for t in (server.get("affinity") or {}).get("podAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", [])]
    assert [t["topologyKey"] for t in (pod.get("affinity") or {}).get("podAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", [])] == terms
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert {m["mountPath"] for m in s["volumeMounts"] if m["name"] in ("dshm",) or m["name"].endswith("-host")} <= mounts
    env, server_env = ({e["name"]: e.get("value") for e in x["env"]} for x in (c, s))
    nccl = {k: v for k, v in server_env.items() if k.startswith(fabric_check.COLLECTIVE_ENV_PREFIXES)}
    assert {k: env[k] for k in nccl} == nccl
    # The pool's setup lines (interfaces, NCCL plugin environment) run first, as in the server's script.
    setup = [ln for ln in s["args"][0].splitlines() if ln.startswith(("export NCCL", "export GLOO", "source", "ldconfig"))]
    assert all(ln in c["args"][0].splitlines() for ln in setup)
    # Claims: the same templates' shapes, from the same function.
    rec = plan(stack).recording
    shapes = {r.name.split("-", 2)[2]: unwrap(r)["spec"] for r in
              rec.by_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate")}
    assert shapes.get("fabric-rdma") == shapes.get("server-rdma")
    domains = sorted(r.name for r in rec.by_type("kubernetes:resource.nvidia.com/v1beta1:ComputeDomain"))
    assert ("k3-fabric-nvlink-0" in domains) == ("k3-server-nvlink-0" in domains)


@pytest.mark.parametrize("stack", sorted(CHECKED))
def test_the_server_waits_for_the_check_and_the_check_not_for_the_weights(stack: str) -> None:
    rec = plan(stack).recording
    check = rec.one("k3infra:index:FabricCheck")
    server = rec.one("k3infra:index:ModelServer")
    job = rec.one(JOB, "k3-fabric-0-job")

    def on(deps: tuple[str, ...], kind: str) -> bool:  # a component's dependency reaches its children's URNs
        return any(f"::k3infra:index:{kind}$" in d or f"::k3infra:index:{kind}::" in d for d in deps)
    assert job.urn in server.dependencies
    assert not on(check.dependencies, "WeightSync") and not on(job.dependencies, "WeightSync")
    assert on(job.dependencies, "PlacementCheck") == bool(rec.by_type("k3infra:index:PlacementCheck"))


def test_turned_off_it_plans_nothing_and_says_so() -> None:
    p = plan("gcp-a4-sglang", "fabricCheck.enabled=false")
    assert not [r for r in p.recording.by_type(JOB) if r.name.startswith("k3-fabric")]
    assert p.recording.outputs["fabricCheck"] == {"status": "skipped", "reason": "fabricCheck.enabled is false"}
    assert any(w.startswith("fabricCheck.enabled is false: nothing proves the fabric between the replica's 2 nodes")
               for w in p.warnings)
    assert p.config.sizing.fabric is None
    assert "fabric check" not in [ph.name for ph in p.config.sizing.cold_start.phases]


def test_the_threshold_reaches_the_probe_and_is_bounded() -> None:
    env = {e["name"]: e.get("value") for e in
           check_job("gcp-a4-sglang", "fabricCheck.minBusbwFraction=0.8")["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert json.loads(env["K3_FABRIC_PLAN"])["threshold"] == 0.8
    with pytest.raises(ConfigError) as e:
        plan("gcp-a4-sglang", "fabricCheck.minBusbwFraction=1.5")
    assert [str(p) for p in e.value.problems] == [
        "k3infra:fabricCheck.minBusbwFraction: is out of range (given: 1.5; allowed: 0.05 to 1)"]


def test_the_check_is_on_the_pool_branch_of_the_cold_start() -> None:
    cold = plan("gcp-a4xmax").config.sizing.cold_start
    phases = {ph.name: ph for ph in cold.phases}
    assert phases["fabric check"].seconds == 150
    assert phases["fabric check"].start_seconds == phases["image pre-pull"].end_seconds
    assert phases["load"].start_seconds == max(phases["fabric check"].end_seconds, phases["weight sync"].end_seconds)


def test_a_failure_ends_with_what_the_pool_gives_the_pods_and_how_to_check_again() -> None:
    env = {e["name"]: e.get("value") for e in
           check_job("gcp-a4xmax")["spec"]["template"]["spec"]["containers"][0]["env"]}
    (path,) = json.loads(env["K3_FABRIC_PLAN"])["paths"]
    assert path["advice"] == (
        "This pool gives the pods: 8 x mrdma.google.com per pod (GpuPool.device_claims, claim rdma); a ComputeDomain "
        "per group whose IMEX channel every pod claims (GpuPool.compute_domains); the node's /home/kubernetes/bin/nvidia "
        "at /usr/local/nvidia (GpuPool.host_mounts); the pool's NCCL environment and setup lines (GpuPool.env, "
        "GpuPool.setup_commands). Once fixed, `kubectl -n kimi-k3 delete job k3-fabric-0` "
        "and `pulumi up --refresh` check again.")


def test_the_output_is_pending_in_a_plan_with_each_path_s_expected_figure_and_floor() -> None:
    """``fabricCheck`` before the Job has run (a plan, ``pulumi preview``): what each path must reach; ``pulumi up``
    fills each group with what its leader measured (tests/fabric/test_report.py)."""
    out = offline.unwrap(plan("alicloud-ack").recording.outputs["fabricCheck"])
    note = ("the check runs in Job k3-fabric-0 during `pulumi up`, before the server is created; the bus bandwidth and "
            "transport of each path land in this output; meanwhile `k3infra status <stack>` (its fabric line) or "
            "`kubectl -n kimi-k3 logs job/k3-fabric-0`")
    assert {k: v for k, v in out.items() if k != "paths"} == {
        "status": "pending", "namespace": "kimi-k3", "threshold": 0.5, "jobs": ["k3-fabric-0"],
        "groups": [{"job": "k3-fabric-0", "status": "pending", "note": note}]}
    assert [(p["name"], p["collective"], p["ranks"], p["expect"], p["expectedBusbwGBs"], p["floorBusbwGBs"])
            for p in out["paths"]] == [("tensor-parallel", "all_reduce", 8, "nvlink", 450.0, 225.0),
                                       ("pipeline", "all_reduce", 24, "socket", 21.25, 10.62)]
    assert set(out["paths"][0]) == {"name", "collective", "ranks", "expect", "expectedBusbwGBs", "floorBusbwGBs",
                                    "basis"}
    roles = offline.unwrap(plan("gcp-a4xmax-pd").recording.outputs["fabricCheck"])
    assert (roles["status"], sorted(roles["roles"])) == ("pending", ["decode", "prefill"])


@pytest.mark.parametrize("stack", ["gcp-a4xmax", "alicloud-ack"])
def test_the_leader_may_patch_its_own_job_and_nothing_else(stack: str) -> None:
    """The report's way out: the pods mount their token, their Role may patch the check's Jobs only, and each pod
    knows its Job's name."""
    rec = plan(stack).recording
    role = unwrap(rec.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "k3-fabric-role"))
    assert role["rules"] == [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["patch"],
                              "resourceNames": ["k3-fabric-0"]}]
    binding = unwrap(rec.one("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "k3-fabric-binding"))
    assert (binding["roleRef"]["name"], binding["subjects"]) == (
        "k3-fabric", [{"kind": "ServiceAccount", "name": "k3-fabric", "namespace": "kimi-k3"}])
    job = rec.one(JOB, "k3-fabric-0-job")
    pod = unwrap(job)["spec"]["template"]["spec"]
    assert (pod["serviceAccountName"], pod["automountServiceAccountToken"]) == ("k3-fabric", True)
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert (env["K3_NAMESPACE"], env["K3_JOB_NAME"]) == ("kimi-k3", "k3-fabric-0")
    binding_urn = rec.one("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "k3-fabric-binding").urn
    assert binding_urn in job.dependencies
