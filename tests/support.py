"""Helpers for the tests: plan stacks, run programs under the recording engine, find the vendored CRDs."""

import functools
import importlib.util
import os
from importlib.machinery import SourceFileLoader
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pytest

from k3infra import offline, planning
from k3infra.offline import Recording

ROOT = Path(__file__).resolve().parent.parent


CRDS = ROOT / "schemas" / "crds"
"""The vendored upstream CRDs (schemas/crds/SOURCES.md names each one's repository, ref and path)."""
STACKS = planning.stack_names(ROOT)

_NO_DSPARK = ("speculativeDecoding=none", "weights.draftRevision=null")
SGLANG_PD: dict[str, tuple[str, ...]] = {
    # 2 x 8 B200 prefill (TEP 16, as the aggregated stack) + 7 x 8 decode (DEP 56: the fewest nodes whose GPUs hold
    # K3's replicated weights and divide its 896 experts); the example reservation holds 2 hosts, so another name
    "gcp-a4-sglang": ("topology={mode: disaggregated, prefill: {nodes: 2}, decode: {nodes: 7}}", "nodes=null",
                      "tensorParallel=null", "capacity.reservation=k3-a4-pd", *_NO_DSPARK),
    # 4 x 4 GB200 prefill (TEP 16 over multi-node NVLink) + 14 x 4 decode (DEP 56): the 18 VMs of one NVL72 sub-block
    "gcp-a4x-sglang": ("topology={mode: disaggregated, prefill: {nodes: 4}, decode: {nodes: 14}}", *_NO_DSPARK),
}
"""The GKE SGLang stacks disaggregated (docs/topologies.md, "SGLang"): the overrides of each."""


@functools.lru_cache(maxsize=None)
def plan(ref: str, *sets: str) -> planning.Plan:
    """The offline plan of a stack (cached: plans are deterministic)."""
    return planning.plan(ref, sets, root=ROOT)


def record(program: Callable[[], Any], *, stack: str = "test", config: dict[str, Any] | None = None) -> Recording:
    """Run ``program`` (which registers resources) under the recording engine."""
    return offline.run(program, project="k3infra", stack=stack, config=config or {})


def load_script(name: str) -> ModuleType:
    """A Python program under scripts/ (no .py suffix), imported as a module."""
    loader = SourceFileLoader(name.replace("-", "_"), str(ROOT / "scripts" / name))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def inventory(rec: Recording) -> list[tuple[str, str, str | None]]:
    """(type, name, parent type) of every registration, in stable order."""
    return [(r.type, r.name, r.parent_type) for r in rec.ordered()]


def checkov_binary() -> str:
    """$K3INFRA_CHECKOV, else /tmp/ckv/bin/checkov, else .checkov-venv/bin/checkov (scripts/test installs it).

    Never skipped: a missing scanner fails the test with how to get it."""
    for candidate in (os.environ.get("K3INFRA_CHECKOV"), "/tmp/ckv/bin/checkov", str(ROOT / ".checkov-venv/bin/checkov")):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail("checkov not found: run ./scripts/test (it installs checkov in .checkov-venv) or set K3INFRA_CHECKOV")


INSTALLED_GATEWAY = [
    # endpoint.gateway where the cluster has no inference gateway (AKS, EKS, ACK, an existing cluster without
    # kubernetes.gatewayClass): agentgateway and the CRDs it needs, then the picker's chart, the parameters of the
    # proxy's Service, its proxies' and the picker's NetworkPolicies (serving.gateway_install, serving.gateway).
    ("k3infra:index:InferenceGateway", "k3-gateway", None),
    ("kubernetes:agentgateway.dev/v1alpha1:AgentgatewayParameters", "k3-gateway-proxy", "k3infra:index:InferenceGateway"),
    ("kubernetes:core/v1:Namespace", "k3-gateway-agentgateway-namespace", "k3infra:index:InferenceGateway"),
    ("kubernetes:gateway.networking.k8s.io/v1:Gateway", "k3-gateway-gateway", "k3infra:index:InferenceGateway"),
    ("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute", "k3-gateway-route", "k3infra:index:InferenceGateway"),
    ("kubernetes:helm.sh/v4:Chart", "k3-gateway-agentgateway", "k3infra:index:InferenceGateway"),
    ("kubernetes:helm.sh/v4:Chart", "k3-gateway-agentgateway-crds", "k3infra:index:InferenceGateway"),
    ("kubernetes:helm.sh/v4:Chart", "k3-gateway-epp", "k3infra:index:InferenceGateway"),
    ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-gateway-picker-network-policy", "k3infra:index:InferenceGateway"),
    ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-gateway-proxy-network-policy", "k3infra:index:InferenceGateway"),
    ("kubernetes:yaml/v2:ConfigFile", "k3-gateway-gateway-api-crds", "k3infra:index:InferenceGateway"),
    ("kubernetes:yaml/v2:ConfigFile", "k3-gateway-inference-crds", "k3infra:index:InferenceGateway"),
]
"""The InferenceGateway's resources where the stack installs the gateway (every cloud's are these)."""


def installed_gateway_spec(rec: Recording) -> dict:
    """The Gateway of a stack that installs agentgateway, after checking the charts' pins and their order."""
    from k3infra import offline

    crds = rec.one("kubernetes:helm.sh/v4:Chart", "k3-gateway-agentgateway-crds")
    controller = rec.one("kubernetes:helm.sh/v4:Chart", "k3-gateway-agentgateway")
    values = offline.plain(controller.inputs)
    assert (values["chart"], values["version"], values["namespace"], values["values"]) == (
        "oci://cr.agentgateway.dev/charts/agentgateway", "v1.0.0", "agentgateway-system",
        {"inferenceExtension": {"enabled": True}})
    assert offline.plain(crds.inputs)["chart"] == "oci://cr.agentgateway.dev/charts/agentgateway-crds"
    files = {r.name: offline.plain(r.inputs)["file"] for r in rec.by_type("kubernetes:yaml/v2:ConfigFile")
             if r.name.startswith("k3-gateway-")}
    assert files == {
        "k3-gateway-gateway-api-crds":
            "https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.6.1/standard-install.yaml",
        "k3-gateway-inference-crds": "https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/"
                                     "download/v1.6.0/manifests.yaml"}
    gateway = rec.one("kubernetes:gateway.networking.k8s.io/v1:Gateway", "k3-gateway-gateway")
    for waits in (gateway, rec.one("kubernetes:helm.sh/v4:Chart", "k3-gateway-epp")):
        assert controller.urn in waits.dependencies, f"{waits.name} waits for agentgateway's controller"
    assert crds.urn in controller.dependencies
    spec = offline.plain(gateway.inputs)["spec"]
    assert spec["gatewayClassName"] == "agentgateway"
    return spec
