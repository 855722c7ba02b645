"""The Pulumi program: configuration, then sizing, then the cloud's deployment, then the stack outputs.

``__main__.py`` calls :func:`main`; the recording engine runs the same function offline.
"""

import importlib
import importlib.util
from types import ModuleType

import pulumi

from . import offline, sizing
from .config import StackConfig, from_pulumi
from .result import DeploymentResult


def deployment_module(cfg: StackConfig) -> ModuleType | None:
    """``k3infra.<cloud>.deployment``, or None while that cloud is not implemented.

    Imported lazily so a stack loads only its own cloud's SDK.
    """
    package = f"k3infra.{cfg.cloud}"
    if importlib.util.find_spec(package) is None or importlib.util.find_spec(f"{package}.deployment") is None:
        return None
    return importlib.import_module(f"{package}.deployment")


def build(cfg: StackConfig) -> DeploymentResult:
    """Register the stack's resources through its cloud's deployment."""
    module = deployment_module(cfg)
    if module is None:
        return DeploymentResult(
            warnings=(f"k3infra.{cfg.cloud} is not implemented yet: this plan shows the configuration and the sizing, "
                      "and registers no resources",),
        )
    result = module.deploy(cfg)
    assert isinstance(result, DeploymentResult)
    return result


def layout_warnings(cfg: StackConfig) -> tuple[str, ...]:
    """A warning when the stack's nodes, tensorParallel or pipelineParallel move its replica off the layout mode k3infra
    recommends for the accelerator (``sizing.default_nodes`` and ``sizing.layout`` with none of them set), naming both
    layouts and what the move drops: ``--set nodes=3`` on gcp-a4xmax turns TP=8 over multi-node NVLink, in a
    ComputeDomain, into TP=4 x PP=3 across nodes. None where the layout already warns about itself (tensor
    parallelism over the fabric names the default it leaves)."""
    have = cfg.sizing.layout
    choice = sizing.default_nodes(cfg.model, cfg.accelerator, cfg.memory_fraction)
    if choice is None or have.warnings:
        return ()
    best = sizing.layout(cfg.accelerator, choice.nodes)
    if best.mode == have.mode:
        return ()
    sku = cfg.accelerator.sku
    text = (f"layout: nodes {have.nodes}, TP={have.tensor_parallel} x PP={have.pipeline_parallel} run {have.mode}, "
            f"off the layout mode recommended for {sku}: {best.mode} (TP={best.tensor_parallel} x "
            f"PP={best.pipeline_parallel} on {choice.nodes} x {sku}, what k3infra picks with nodes, tensorParallel "
            "and pipelineParallel unset)")
    if best.multi_node_nvlink:
        text += ("; no ComputeDomain: the replica's pods no longer share multi-node NVLink, tensor parallelism "
                 "stays inside each node")
    return (text,)


def export(cfg: StackConfig, result: DeploymentResult) -> None:
    """Export the stack outputs common to every cloud, then the deployment's own."""
    s = cfg.sizing
    pulumi.export("cloud", str(cfg.cloud))
    pulumi.export("platform", str(cfg.platform))
    pulumi.export("accelerator", cfg.accelerator.sku)
    pulumi.export("servedModelName", cfg.model.served_model_name)
    pulumi.export("sizing", s.as_dict())
    pulumi.export("monthlyCost", {
        "currency": "USD",
        "low": s.cost.monthly_low,
        "high": s.cost.monthly_high,
        "estimate": s.cost.estimate,
    })
    warnings = list(dict.fromkeys([*cfg.warnings, *layout_warnings(cfg), *result.warnings]))
    pulumi.export("warnings", warnings)
    pulumi.export("billingAfterDestroy", list(result.billing_after_destroy))
    for key, value in result.outputs.items():
        pulumi.export(key, value)


def main() -> None:
    """Run the program for the current stack."""
    cfg = from_pulumi(real_run=not offline.active())
    for w in (*cfg.warnings, *layout_warnings(cfg)):
        pulumi.log.warn(w)
    export(cfg, build(cfg))
