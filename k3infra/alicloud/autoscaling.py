"""PAI-EAS horizontal auto scaling: the component's plain arguments, the stack's ``k3infra:autoscaling`` turned into
them, and the service definition's ``autoscaler`` built from them (k3infra.catalog.autoscaling cites the EAS pages)."""

from typing import TypedDict

from ..catalog.autoscaling import ScalingSignal
from ..config.model import AutoscalingConfig
from .eas_config import EasAutoscaler, EasOnZero, EasScaleStrategy, EasScalingBehavior, EasStabilization

EAS_METRICS = {ScalingSignal.RPS: "qps", ScalingSignal.GPU: "gpu"}
"""The EAS metric of each signal EAS reads (config validation rejects the others)."""


class EasAutoscalingArgs(TypedDict):
    """Horizontal auto scaling of a PaiEasService."""

    min_replicas: int
    """Fewest units (0: scale to zero when idle)."""
    max_replicas: int
    """Most units; the resource must hold them."""
    metric: str
    """What EAS follows: ``qps`` (requests per second per instance) or ``gpu`` (GPU utilization, percent)."""
    threshold: float
    """The per-instance value above which EAS scales out."""
    scale_down_delay_seconds: int
    """How long the metric must stay low before a unit goes (and, at the floor of 0, before the last one goes)."""


def eas_autoscaling_args(a: AutoscalingConfig) -> EasAutoscalingArgs | None:
    """The component's arguments for the stack's autoscaling; None when it is off."""
    if not a.enabled:
        return None
    return EasAutoscalingArgs(min_replicas=a.min_replicas, max_replicas=a.max_replicas,
                              metric="gpu" if a.signal == ScalingSignal.GPU else "qps", threshold=a.target,
                              scale_down_delay_seconds=a.scale_down_delay_seconds)


def eas_autoscaler(args: EasAutoscalingArgs) -> EasAutoscaler:
    """The service's autoscaler: scale out at once (stabilization 0, EAS's default), in after the delay, to zero
    (a floor of 0) after the same delay at the floor."""
    delay = int(args["scale_down_delay_seconds"])
    low = int(args["min_replicas"])
    return EasAutoscaler(
        min=low, max=int(args["max_replicas"]),
        scale_strategies=(EasScaleStrategy(metric_name=str(args["metric"]), threshold=float(args["threshold"])),),
        behavior=EasScalingBehavior(
            scale_up=EasStabilization(stabilization_window_seconds=0),
            scale_down=EasStabilization(stabilization_window_seconds=delay),
            on_zero=EasOnZero(scale_down_grace_period_seconds=delay) if low == 0 else None))
