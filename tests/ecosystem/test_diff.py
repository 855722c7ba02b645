"""``k3infra diff`` over two ``k3infra plan --format json`` documents."""

import json
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from typer.testing import CliRunner

from k3infra import offline, plandiff
from k3infra.cli import app
from k3infra.plandiff import MISSING, Kind
from k3infra.weightcopy.copier.caches import cache_key

from ..support import plan, record

runner = CliRunner()
NEW_IMAGE = "us-central1-docker.pkg.dev/my-project/k3/vllm-openai:kimi-k3-arm64-v2"


def plan_json(ref: str, *sets: str) -> dict[str, Any]:
    """What ``k3infra plan REF --set ... --format json`` prints, through JSON and back."""
    return json.loads(json.dumps(plan(ref, *sets).to_json()))


def strings_in(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return [value] if isinstance(value, str) else []


# --- the stacks --------------------------------------------------------------------------------------------


def test_a_stack_against_itself_shows_no_change() -> None:
    base = plan_json("gcp-a4xmax")
    d = plandiff.diff_plans(base, plan_json("gcp-a4xmax"))
    assert d.empty and d.resources == [] and d.outputs == []
    assert d.unchanged == len(base["resources"])
    assert "No changes" in plandiff.render_text(d) and "No changes" in plandiff.render_markdown(d)


def _agent_caches(plan_doc: dict[str, Any]) -> list[dict[str, str]]:
    """The node agent's ``--cache`` keys' parts, or none where the stack carries no caches."""
    for r in plan_doc["resources"]:
        if r["name"].endswith("node-agent-daemon-set"):
            args = r["inputs"]["spec"]["template"]["spec"]["containers"][0]["args"]
            return [json.loads(args[i + 1]) for i, a in enumerate(args) if a == "--cache"]
    return []


def test_a_changed_engine_image_shows_exactly_the_image() -> None:
    """Every occurrence of the image in the base plan's resources is one change to the new image, and nothing
    else differs: no resource added, removed or replaced, no output, no warning. (Before the GCP deployment
    registers resources the image occurs nowhere and the diff is empty; afterwards it is exactly the image.)"""
    base = plan_json("gcp-a4xmax")
    old_image = base["outputs"].get("image") or plan("gcp-a4xmax").config.image
    d = plandiff.diff_plans(base, plan_json("gcp-a4xmax", f"image={NEW_IMAGE}"))
    # A new image is a new rollout: the verify Job is replaced so the checklist runs again (issue 19), and the
    # placement check, which runs in the engine image, checks the nodes again before it.
    jobs = ("k3-placement-job", "k3-verify-job")
    assert sorted((r.name, r.kind) for r in d.resources if r.name in jobs) == [(j, Kind.REPLACE) for j in jobs]
    d.resources = [r for r in d.resources if r.name not in jobs]
    # The fabric check's Job keeps its first run (ignoreChanges: the server's pods hold the GPUs by then), as Pulumi
    # leaves it: not in the diff.
    assert "k3-fabric-0-job" not in [r.name for r in d.resources]
    occurrences = sum(old_image in s for r in base["resources"] if r["name"] not in (*jobs, "k3-fabric-0-job")
                      for s in strings_in(r["inputs"]))
    changes = [c for r in d.resources for c in r.changes]
    assert {r.kind for r in d.resources} <= {Kind.CHANGE}
    # the engine containers' scripts name the caches' key, a hash of the image among its parts (issue 40): that
    # key, and nothing else in them, moves with the image
    caches = _agent_caches(base)
    key_parts = caches[0] if caches else {}
    old_key, new_key = cache_key(key_parts), cache_key({**key_parts, "image": NEW_IMAGE})
    scripts = [c for c in changes if c.path.endswith("containers[name=engine].args")]
    assert len(scripts) == (2 if key_parts else 0)
    for c in scripts:
        assert [str(a).replace(old_key, new_key) for a in c.old] == c.new, c
    # and the engine cache's host directory, one per key: the server's, leader and workers (the node agent mounts
    # their root)
    cache_dirs = [c for c in changes if c.path.endswith("volumes[name=engine-cache].hostPath.path")]
    assert len(cache_dirs) == (2 if key_parts else 0)
    for c in cache_dirs:
        assert isinstance(c.old, str) and c.old.replace(old_key, new_key) == c.new, c
    changes = [c for c in changes if c not in scripts and c not in cache_dirs]
    assert len(changes) == occurrences
    for c in changes:
        if isinstance(c.old, list):  # the node agent's arguments: the image is a part of the caches' key (issue 40)
            assert c.path.endswith("containers[name=node-agent].args"), c
            assert [str(a).replace(old_image, NEW_IMAGE) for a in c.old] == c.new, c
            continue
        assert isinstance(c.old, str) and c.old.replace(old_image, NEW_IMAGE) == c.new, c
    assert d.outputs == [c for c in d.outputs if NEW_IMAGE in json.dumps(c.new)]
    # a warning that names the image (a tag keying the warm caches) names the new one
    assert [w.replace(old_image, NEW_IMAGE) for w in d.warnings_removed] == d.warnings_added
    if any(r["type"] == "k3infra:index:ModelServer" for r in base["resources"]):
        # with serving in the stack: the image is the server's, leader and workers, and the pre-pull's that fetches it
        # onto the GPU nodes during the sync; nothing else moves
        assert occurrences >= 3 and sorted((r.kind, r.type) for r in d.resources) == [
            (Kind.CHANGE, "kubernetes:apps/v1:DaemonSet"),  # the pre-pull
            (Kind.CHANGE, "kubernetes:apps/v1:DaemonSet"),  # the node agent: the caches' key (issue 40)
            (Kind.CHANGE, "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")]
        # the engine container's, where the loader mounts the bucket the marker wait's (which runs in it), and the
        # pre-pull's
        assert all(c.path.endswith(("containers[name=engine].image", "initContainers[name=wait-for-weights].image",
                                    "containers[name=engine].args", "volumes[name=engine-cache].hostPath.path"))
                   or r.type == "kubernetes:apps/v1:DaemonSet" for r in d.resources for c in r.changes), \
            [c.path for c in changes]


def test_a_changed_node_count_shows_the_node_count_and_what_follows_from_it() -> None:
    base, head = plan_json("gcp-a4xmax"), plan_json("gcp-a4xmax", "nodes=3")
    d = plandiff.diff_plans(base, head)
    # TP=12 cannot split the heads: three nodes run TP=4 x PP=3, which needs no multi-node NVLink, so the NVIDIA DRA
    # driver and the ComputeDomains (the server's and the fabric check's) go; nothing is added
    assert d.count(Kind.ADD) == 0
    assert sorted(r.name for r in d.resources if r.kind == Kind.REMOVE) == [
        "k3-fabric-nvlink-0", "k3-gpu-nvidia-dra", "k3-gpu-nvidia-dra-critical-pods", "k3-gpu-nvidia-dra-namespace",
        "k3-server-nvlink-0"]
    outputs = {c.path: (c.old, c.new) for c in d.outputs}
    assert outputs["sizing.nodes"] == (2, 3) and outputs["sizing.totalNodes"] == (2, 3)
    assert outputs["sizing.layout.tensorParallel"] == (8, 4)  # three 4-GPU nodes: TP inside a node, PP=3
    assert outputs["monthlyCost.low"] == (105120.0, 157680.0)
    pools = [r for r in d.resources if r.type == "gcp:container/nodePool:NodePool"]
    if any(r["type"] == "gcp:container/nodePool:NodePool" for r in base["resources"]):
        # with the GKE deployment: the GPU pool grows in place, and nothing is replaced but the placement check
        # (three nodes per replica in one sub-block now) and the verify Job (a new layout is a new rollout: the
        # checklist runs again)
        assert [r.name for r in d.resources if r.kind == Kind.REPLACE] == ["k3-placement-job", "k3-verify-job"]
        assert [(p.kind, [(c.path, c.old, c.new) for c in p.changes]) for p in pools] == \
            [(Kind.CHANGE, [("nodeCount", 2, 3)])]
    text = plandiff.render_text(d)
    assert "sizing.nodes: 2 → 3" in text
    md = plandiff.render_markdown(d)
    assert "| `sizing.nodes` | `2` | `3` |" in md


def test_every_stack_against_itself_is_empty() -> None:
    from ..support import STACKS
    for stack in STACKS:
        assert plandiff.diff_plans(plan_json(stack), plan_json(stack)).empty, stack


# --- resources: synthetic programs through the recording engine -------------------------------------------


def k8s_program(image: str = "vllm:1", size: int = 2, parent_name: str | None = None, token: str = "t1",
                job_image: str = "copy:1", extra_env: bool = False, drop_config: bool = False,
                alias_old: bool = False, public: bool = False) -> dict[str, Any]:
    def program() -> None:
        parent = pulumi.ComponentResource("test:index:Group", parent_name, None) if parent_name else None
        opts = pulumi.ResourceOptions(parent=parent)
        if parent and alias_old:
            opts = pulumi.ResourceOptions(parent=parent, aliases=[pulumi.Alias(parent=pulumi.ROOT_STACK_RESOURCE)])
        k8s.core.v1.Secret("api-key", metadata=k8s.meta.v1.ObjectMetaArgs(name="api-key", namespace="k3"),
                           string_data={"key": pulumi.Output.secret(token)})
        if not drop_config:
            k8s.core.v1.ConfigMap("settings", metadata=k8s.meta.v1.ObjectMetaArgs(name="settings", namespace="k3"),
                                  data={"mode": "internal"})
        env = [k8s.core.v1.EnvVarArgs(name="VLLM_A", value="1")]
        if extra_env:
            env.insert(0, k8s.core.v1.EnvVarArgs(name="HF_TOKEN", value="hf_abc"))
        k8s.apps.v1.Deployment(
            "server",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="server", namespace="k3"),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=size,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels={"app": "server"}),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels={"app": "server"}),
                    spec=k8s.core.v1.PodSpecArgs(containers=[
                        k8s.core.v1.ContainerArgs(name="engine", image=image, env=env)]))),
            opts=opts)
        k8s.batch.v1.Job(
            "sync",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="sync", namespace="k3"),
            spec=k8s.batch.v1.JobSpecArgs(template=k8s.core.v1.PodTemplateSpecArgs(spec=k8s.core.v1.PodSpecArgs(
                restart_policy="Never", containers=[k8s.core.v1.ContainerArgs(name="copy", image=job_image)]))))
        k8s.core.v1.Service(
            "endpoint", metadata=k8s.meta.v1.ObjectMetaArgs(name="endpoint", namespace="k3"),
            spec=k8s.core.v1.ServiceSpecArgs(type="LoadBalancer" if public else "ClusterIP",
                                             selector={"app": "server"},
                                             ports=[k8s.core.v1.ServicePortArgs(port=8000)]))
        pulumi.export("endpoint", "http://endpoint.k3:8000")
        pulumi.export("token", pulumi.Output.secret(token))

    rec = record(program, stack="diff")
    return json.loads(json.dumps({"stack": "diff", "project": "k3infra",
                                  "resources": [r.to_json() for r in rec.ordered()],
                                  "outputs": offline.plain(rec.outputs), "sizing": {}, "warnings": []}))


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    return k8s_program()


def by_name(d: plandiff.PlanDiff) -> dict[str, plandiff.ResourceDiff]:
    return {r.name: r for r in d.resources}


def test_in_place_change_has_the_path_and_values(base: dict[str, Any]) -> None:
    d = plandiff.diff_plans(base, k8s_program(image="vllm:2", size=3))
    assert [(r.kind, r.type, r.name) for r in d.resources] == [(Kind.CHANGE, "kubernetes:apps/v1:Deployment", "server")]
    assert [(c.path, c.old, c.new, c.forces_replacement) for c in d.resources[0].changes] == [
        ("spec.replicas", 2, 3, False),
        ("spec.template.spec.containers[name=engine].image", "vllm:1", "vllm:2", False),
    ]
    assert d.unchanged == len(base["resources"]) - 1 and d.outputs == []
    text = plandiff.render_text(d)
    assert "~ kubernetes:apps/v1:Deployment server" in text
    assert 'spec.template.spec.containers[name=engine].image: "vllm:1" → "vllm:2"' in text


def test_immutable_property_is_a_replacement(base: dict[str, Any]) -> None:
    d = plandiff.diff_plans(base, k8s_program(job_image="copy:2", public=True))
    rs = by_name(d)
    assert rs["sync"].kind == Kind.REPLACE and "spec.template.spec.containers[name=copy].image" in rs["sync"].reason
    assert rs["endpoint"].kind == Kind.REPLACE and rs["endpoint"].reason == "spec.type cannot change in place"
    assert "+- kubernetes:batch/v1:Job sync  (replace: " in plandiff.render_text(d)
    assert "**forces replacement**" in plandiff.render_markdown(d)


def test_added_and_removed(base: dict[str, Any]) -> None:
    d = plandiff.diff_plans(base, k8s_program(drop_config=True))
    assert [(r.kind, r.name) for r in d.resources] == [(Kind.REMOVE, "settings")]
    back = plandiff.diff_plans(k8s_program(drop_config=True), base)
    assert [(r.kind, r.name) for r in back.resources] == [(Kind.ADD, "settings")]
    added = {c.path: c.new for c in back.resources[0].changes}
    assert added["data.mode"] == "internal" and added["metadata.name"] == "settings"
    assert "+ kubernetes:core/v1:ConfigMap settings" in plandiff.render_text(back)


def test_a_new_parent_without_alias_is_a_replacement_and_with_alias_a_move(base: dict[str, Any]) -> None:
    d = plandiff.diff_plans(base, k8s_program(parent_name="group"))
    rs = by_name(d)
    assert rs["group"].kind == Kind.ADD
    assert rs["server"].kind == Kind.REPLACE
    assert rs["server"].reason == "its URN changes (parent (stack) → test:index:Group group) and no alias keeps the old one"
    assert rs["server"].base_urn and rs["server"].base_urn.endswith("::server")
    assert d.count(Kind.REMOVE) == 0

    aliased = by_name(plandiff.diff_plans(base, k8s_program(parent_name="group", alias_old=True)))
    assert aliased["server"].kind == Kind.CHANGE and aliased["server"].reason == "moved; aliased to its old URN"


def test_long_command_lines_show_the_changed_words() -> None:
    script = ("set -eo pipefail\nexec vllm serve /mnt/models/Kimi-K3 --trust-remote-code --load-format fastsafetensors "
              "--served-model-name Kimi-K3 --tensor-parallel-size {tp} --port 8000 --gpu-memory-utilization 0.9")
    plans = []
    for tp, extra in ((8, ""), (4, " --pipeline-parallel-size 2")):
        res = {"urn": "u", "type": "kubernetes:apps/v1:Deployment", "name": "server",
               "inputs": {"spec": {"template": {"spec": {"containers": [
                   {"name": "engine", "args": [script.format(tp=tp) + extra]}]}}}}}
        plans.append({"stack": "s", "resources": [res]})
    d = plandiff.diff_plans(*plans)
    assert "spec.template.spec.containers[name=engine].args: …--served-model-name Kimi-K3 --tensor-parallel-size " \
           "[-8-]{+4+} --port 8000 --gpu-memory-utilization… | …8000 --gpu-memory-utilization 0.9 " \
           "{+--pipeline-parallel-size 2+}…" in plandiff.render_text(d)
    assert "| changed words: | `…--served-model-name Kimi-K3 --tensor-parallel-size [-8-]{+4+}" in plandiff.render_markdown(d)


def test_markdown_fits_a_budget(base: dict[str, Any]) -> None:
    """A PR comment holds 65,536 characters: with max_chars the summary and resource table stay, property tables
    are dropped (changes before additions) with a note."""
    empty = {"stack": "diff", "resources": [], "outputs": {}, "warnings": []}
    d = plandiff.diff_plans(empty, base)
    full = plandiff.render_markdown(d)
    short = plandiff.render_markdown(d, max_chars=1500)
    assert len(short) <= 1500 < len(full)
    assert short.count("| `+` |") == full.count("| `+` |") == len(base["resources"])
    assert short.count("<details>") < full.count("<details>") == len(base["resources"])
    left = full.count("<details>") - short.count("<details>")
    assert f"_Left out to keep the comment short: {left} resource detail(s); the job's artifact has the full diff._" in short


def test_secrets_stay_masked(base: dict[str, Any]) -> None:
    d = plandiff.diff_plans(base, k8s_program(token="t2", extra_env=True))
    rs = by_name(d)
    # the Secret's data is a Pulumi secret: the plan holds "[secret]" on both sides, so no change shows
    assert "api-key" not in rs
    # the exported token too; a plain-text credential in an env var is masked by its name
    assert d.outputs == []
    env = {c.path: c for c in rs["server"].changes}
    hf = env["spec.template.spec.containers[name=engine].env[name=HF_TOKEN].value"]
    assert hf.masked and hf.old is MISSING
    text = plandiff.render_text(d) + plandiff.render_markdown(d)
    assert "hf_abc" not in text and "t2" not in text and "[secret]" in text
    # a new env var at the front is one addition, not a shift of every entry
    assert len(rs["server"].changes) == 2  # name and value of HF_TOKEN


def test_secret_changes_say_changed_without_values() -> None:
    old = {"stack": "s", "resources": [{"urn": "u", "type": "gcp:x/y:Z", "name": "z",
                                        "inputs": {"password": "hunter2", "passwordSecretName": "p"}}]}
    new = {"stack": "s", "resources": [{"urn": "u", "type": "gcp:x/y:Z", "name": "z",
                                        "inputs": {"password": "hunter3", "passwordSecretName": "q"}}]}
    d = plandiff.diff_plans(old, new)
    text = plandiff.render_text(d)
    assert "password: [secret] (changed; value hidden)" in text
    assert 'passwordSecretName: "p" → "q"' in text and "hunter" not in text


def test_replace_rules_cover_the_cloud_identities() -> None:
    assert "nodeGroupName" in plandiff.replace_paths("aws:eks/nodeGroup:NodeGroup")
    assert set(plandiff.replace_paths("kubernetes:batch/v1:Job")) == {"metadata.name", "metadata.namespace",
                                                                      "spec.template", "spec.selector"}
    assert "resourceGroupName" in plandiff.replace_paths("azure-native:containerservice:AgentPool")
    assert plandiff.replace_paths("random:index:RandomId") == ()


# --- the command ------------------------------------------------------------------------------------------


def write(tmp: Path, name: str, doc: Any) -> str:
    p = tmp / name
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return str(p)


def test_cli_formats_and_exit_codes(tmp_path: Path, base: dict[str, Any]) -> None:
    b = write(tmp_path, "base.json", base)
    h = write(tmp_path, "head.json", k8s_program(image="vllm:2"))

    same = runner.invoke(app, ["diff", b, b, "--exit-code"])
    assert same.exit_code == 0 and "No changes" in same.stdout

    text = runner.invoke(app, ["diff", b, h])
    assert text.exit_code == 0 and "0 to add, 0 to remove, 0 to replace, 1 to change" in text.stdout

    md = runner.invoke(app, ["diff", b, h, "--format", "markdown", "--exit-code"])
    assert md.exit_code == 1 and md.stdout.startswith("### k3infra diff: diff")
    assert "| `spec.template.spec.containers[name=engine].image` | `\"vllm:1\"` | `\"vllm:2\"` |" in md.stdout

    js = runner.invoke(app, ["diff", b, h, "--format", "json"])
    doc = json.loads(js.stdout)
    assert doc["resources"][0]["changes"][0]["path"] == "spec.template.spec.containers[name=engine].image"

    bad = runner.invoke(app, ["diff", b, write(tmp_path, "bad.json", {"hello": 1})])
    assert bad.exit_code == 2 and "HEAD is not a `k3infra plan --format json` document" in bad.output
    missing = runner.invoke(app, ["diff", b, str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "nope.json" in missing.output


def test_recording_resolves_aliases_and_leaves_out_sdk_version_aliases() -> None:
    """An alias given as a spec (a new parent, a new name) is recorded as the URN it stands for; the aliases a
    provider SDK adds for older API versions of the same resource are left out of plans."""
    doc = k8s_program(parent_name="group", alias_old=True)
    server = next(r for r in doc["resources"] if r["name"] == "server")
    assert server["options"]["aliases"] == ["urn:pulumi:diff::k3infra::kubernetes:apps/v1:Deployment::server"]

    def renamed() -> None:
        k8s.core.v1.ConfigMap("new-name", data={"a": "b"}, opts=pulumi.ResourceOptions(aliases=[pulumi.Alias(name="old-name")]))

    rec = record(renamed, stack="alias")
    assert rec.one("kubernetes:core/v1:ConfigMap").aliases == (
        "urn:pulumi:alias::k3infra::kubernetes:core/v1:ConfigMap::old-name",)
    plain = k8s_program()
    assert all("options" not in r for r in plain["resources"])  # no SDK version aliases left


# --- a change of layout, mode, nodes or engine, named above the resources -------------------------------------

A4XMAX_THREE_NODES_WARNING = (
    "layout: nodes 3, TP=4 x PP=3 run pipeline-across-nodes, off the layout mode recommended for a4x-maxgpu-4g-metal: "
    "multi-node-nvlink (TP=8 x PP=1 on 2 x a4x-maxgpu-4g-metal, what k3infra picks with nodes, tensorParallel and "
    "pipelineParallel unset); no ComputeDomain: the replica's pods no longer share multi-node NVLink, tensor "
    "parallelism stays inside each node")


def test_a_setting_that_moves_the_layout_mode_is_warned_in_the_plan() -> None:
    """--set nodes=3 on gcp-a4xmax drops multi-node NVLink: the plan says so, once; nodes=4 keeps the mode (TP=16
    over the same domain) and no template warns about its own layout this way."""
    from ..support import STACKS
    assert [w for w in plan("gcp-a4xmax", "nodes=3").warnings if w.startswith("layout:")] == [A4XMAX_THREE_NODES_WARNING]
    assert [w for w in plan("gcp-a4xmax", "nodes=4").warnings if w.startswith("layout:")] == []
    assert [w for w in plan("aws-eks", "nodes=2").warnings if w.startswith("layout:")] == [
        "layout: nodes 2, TP=8 x PP=2 run pipeline-across-nodes, off the layout mode recommended for p6-b300.48xlarge: "
        "one-node (TP=8 x PP=1 on 1 x p6-b300.48xlarge, what k3infra picks with nodes, tensorParallel and "
        "pipelineParallel unset)"]
    assert {s: [w for w in plan(s).warnings if w.startswith("layout:")] for s in STACKS} == {s: [] for s in STACKS}


def test_the_diff_names_a_layout_mode_and_node_change_above_the_resources() -> None:
    d = plandiff.diff_plans(plan_json("gcp-a4xmax"), plan_json("gcp-a4xmax", "nodes=3"))
    assert [(c.path, c.old, c.new) for c in d.deployment] == [
        ("layout", "TP=8 x PP=1", "TP=4 x PP=3"), ("mode", "multi-node-nvlink", "pipeline-across-nodes"),
        ("nodes per replica", 2, 3)]
    text = plandiff.render_text(d)
    assert text.startswith("k3infra diff: gcp-a4xmax\ndeployment:\n"
                           "  ~ layout: TP=8 x PP=1 → TP=4 x PP=3\n"
                           "  ~ mode: multi-node-nvlink → pipeline-across-nodes\n"
                           "  ~ nodes per replica: 2 → 3\n\nresources: "), text[:400]
    assert f"warnings:\n  + {A4XMAX_THREE_NODES_WARNING}\n" in text
    md = plandiff.render_markdown(d)
    assert md.startswith("### k3infra diff: gcp-a4xmax\n\n**Deployment**\n\n"
                         "- layout: `TP=8 x PP=1` → `TP=4 x PP=3`\n"
                         "- mode: `multi-node-nvlink` → `pipeline-across-nodes`\n"
                         "- nodes per replica: `2` → `3`\n\n**"), md[:400]
    assert d.to_json()["deployment"][1] == {"path": "mode", "old": "multi-node-nvlink", "new": "pipeline-across-nodes",
                                            "masked": False, "forcesReplacement": False}


def test_the_diff_names_an_engine_change_and_nothing_for_an_unrelated_one() -> None:
    base = plan_json("gcp-a4x-sglang")
    head = json.loads(json.dumps(base))
    head["engine"] = {**base["engine"], "name": "vllm", "version": "0.33.0"}
    assert plandiff.shape_lines(plandiff.diff_plans(base, head).deployment) == [
        f"engine: sglang {base['engine']['version']} → vllm 0.33.0"]
    assert plandiff.diff_plans(base, plan_json("gcp-a4x-sglang", f"image={NEW_IMAGE}",
                                               "imagePlatforms=[arm64]")).deployment == [
        plandiff.Change("engine image", base["engine"]["image"], NEW_IMAGE)]
    assert plandiff.diff_plans(base, plan_json("gcp-a4x-sglang", "replicas=1")).deployment == []
    older = {k: v for k, v in base.items() if k != "engine"}  # a plan from before the engine block compares no engine
    assert plandiff.diff_plans(older, head).deployment == []
