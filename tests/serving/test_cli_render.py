"""``k3infra render`` end to end: a stack file through the whole program to YAML files.

No cloud package exists on this branch, so the tests stand one in: a ``deploy(cfg)`` that hands the seed
shapes' GpuPool / WeightStore / LoadBalancerSettings to ``serve()`` (what every cloud's deployment does).
"""

import json
from pathlib import Path
from types import SimpleNamespace

import pulumi
import pulumi_kubernetes as k8s
import pytest
from typer.testing import CliRunner

from k3infra import planning, program
from k3infra.cli import app
from k3infra.config import StackConfig
from k3infra.result import DeploymentResult
from k3infra.observability.verify_job import with_checklist
from k3infra.catalog.transfer import SYNC_POOL_LABEL, SYNC_POOL_TAINT_KEY
from k3infra.serving.contract import SyncNodes
from k3infra.serving.stack import serve
from tests.serving.shapes import SHAPES
from tests.validation import has_kubernetes_schema, load, validate_kubernetes
from tests.support import ROOT

TOKEN = "hf_CLIrenderTOKEN9876543210zyxwv"
STACK_SHAPE = {"gcp-a4-sglang": "a4-sglang", "azure-gb300": "gb300", "aws-eks": "p6-b300", "gcp-a4xmax": "a4xmax-gateway"}
CLOUD_GATEWAY = {"aws-eks": {"install_gateway": True}, "azure-gb300": {"install_gateway": True},
                 "gcp-a4-sglang": {"internal_gateway_class": "gke-l7-rilb", "gateway_provider": "gke"}}
"""What each cloud adds to the shape's LoadBalancerSettings for the stack's gateway (AKS and EKS install agentgateway,
GKE names its managed class)."""


def fake_cloud(shape_name: str, stack: str = "") -> SimpleNamespace:
    """A deployment module whose deploy() builds nothing of a cloud and calls serve() with a shape's hand-overs."""
    shape = SHAPES[shape_name]

    def deploy(cfg: StackConfig) -> DeploymentResult:
        provider = k8s.Provider("cluster", kubeconfig=pulumi.Output.secret("apiVersion: v1\nkind: Config\n"))
        pool = pulumi.CustomResource("test:index:GpuNodePool", "gpu-pool", {})
        identity = pulumi.CustomResource("test:index:IdentityBinding", "identity", {})
        store = dict(shape.store)
        bucket = cfg.weights.bucket
        scheme = str(store["uri"]).split("://")[0]
        store["uri"] = f"{scheme}://{bucket}/{cfg.weights.model_path(cfg.model.hf_id)}"
        # The sync's own pool, where the sizing counts on one (catalog.transfer.SYNC_POOLS), as a cloud hands it over.
        sync_nodes = SyncNodes(node_selector={SYNC_POOL_LABEL: "sync"}, tolerations=[
            {"key": SYNC_POOL_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]) \
            if cfg.sizing.sync is not None and cfg.sizing.sync.pool else None
        serving = with_checklist(cfg, serve(cfg, name="k3", provider=provider, pool=shape.pool, store=store,  # type: ignore[arg-type]
                                            lb={**shape.lb, **CLOUD_GATEWAY.get(stack, {})},  # type: ignore[typeddict-item]
                                            pool_resources=[pool], identity_resources=[identity],
                                            sync_nodes=sync_nodes))
        return DeploymentResult(outputs=serving.outputs(), warnings=serving.warnings)

    return SimpleNamespace(deploy=deploy)


@pytest.fixture
def with_cloud(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(program, "deployment_module", lambda cfg: fake_cloud(STACK_SHAPE[cfg.stack], cfg.stack))


@pytest.mark.parametrize("stack", sorted(STACK_SHAPE))
def test_render_writes_valid_objects_in_apply_order(stack: str, with_cloud: None, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["render", stack, "--out", str(tmp_path), "--set", f"hfToken={TOKEN}"])
    assert result.exit_code == 0, result.output
    files = sorted(tmp_path.glob("*.yaml"))
    # Namespaces first: the serving namespace, and agentgateway's where the stack installs it (it sorts first).
    assert files and files[0].name.startswith("001-namespace-")
    assert any(f.name.endswith("-namespace-kimi-k3.yaml") for f in files[:2])
    assert [str(f) for f in files] == [line for line in result.stdout.splitlines() if line]
    for f in files:
        text = f.read_text()
        assert TOKEN not in text, f.name
        if not f.name.endswith(".chart.yaml") and has_kubernetes_schema(load(f)):
            validate_kubernetes(load(f))
    kinds = [f.name.split("-")[1] for f in files]
    workload = {"aws-eks": "deployment"}.get(stack, "leaderworkerset")
    assert kinds[-1] == workload or workload in kinds


def test_render_replaces_an_earlier_render(with_cloud: None, tmp_path: Path) -> None:
    (tmp_path / "099-stale-object.yaml").write_text("kind: Stale\n")
    (tmp_path / "notes.txt").write_text("kept\n")
    result = CliRunner().invoke(app, ["render", "aws-eks", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "099-stale-object.yaml").exists()
    assert (tmp_path / "notes.txt").exists()


def test_plan_holds_no_token_in_plain_text(with_cloud: None) -> None:
    """The whole plan (resources, outputs, warnings) with a known token: masked everywhere, wired to the Secret."""
    p = planning.plan("gcp-a4-sglang", [f"hfToken={TOKEN}"], root=ROOT)
    text = json.dumps(p.to_json())
    assert TOKEN not in text
    secret = p.recording.one("kubernetes:core/v1:Secret", "k3-hf-token")
    assert json.dumps(p.to_json()["resources"]).count('"stringData": "[secret]"') == 1
    from k3infra import offline
    assert offline.unwrap(secret.inputs["stringData"]) == {"HF_TOKEN": TOKEN}
    assert p.recording.outputs["endpoint"].startswith("http://10.128.1.")  # the Gateway's (offline_state)


def test_render_of_a_stack_whose_cloud_is_missing_writes_nothing(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(program, "deployment_module", lambda cfg: None)
    result = CliRunner().invoke(app, ["render", "gcp-a4xmax", "--out", str(tmp_path)])
    assert result.exit_code == 0
    assert list(tmp_path.iterdir()) == []
    assert "not implemented yet" in result.stderr


def test_render_reports_configuration_errors_with_exit_code_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, ["render", "aws-eks", "--out", str(tmp_path), "--set", "nodes=0"])
    assert result.exit_code == 2
