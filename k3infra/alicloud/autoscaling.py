"""PAI-EAS horizontal auto scaling from the stack's ``k3infra:autoscaling`` (k3infra.catalog.autoscaling cites the
EAS pages)."""

from ..catalog.autoscaling import ScalingSignal
from ..config.model import AutoscalingConfig
from .eas_config import EasAutoscaler, EasOnZero, EasScaleStrategy, EasScalingBehavior, EasStabilization

EAS_METRICS = {ScalingSignal.RPS: "qps", ScalingSignal.GPU: "gpu"}
"""The EAS metric of each signal EAS reads (config validation rejects the others)."""


def eas_autoscaler(a: AutoscalingConfig) -> EasAutoscaler | None:
    """The service's autoscaler: scale out at once (stabilization 0, EAS's default), in after the stack's
    scale-down delay, to zero (with scaleToZero) after the same delay at the floor; None when autoscaling is off."""
    if not a.enabled:
        return None
    delay = EasStabilization(stabilization_window_seconds=a.scale_down_delay_seconds)
    return EasAutoscaler(
        min=a.min_replicas, max=a.max_replicas,
        scale_strategies=(EasScaleStrategy(metric_name=EAS_METRICS[a.signal], threshold=a.target),),
        behavior=EasScalingBehavior(
            scale_up=EasStabilization(stabilization_window_seconds=0), scale_down=delay,
            on_zero=EasOnZero(scale_down_grace_period_seconds=a.scale_down_delay_seconds) if a.scale_to_zero else None))
