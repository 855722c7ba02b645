"""What the GPU nodes cost."""

from dataclasses import dataclass

from ..catalog import HOURS_PER_MONTH, Accelerator

@dataclass(frozen=True)
class Cost:
    """GPU node cost. The system pool, storage and egress are not included."""

    hourly_low: float
    hourly_high: float
    estimate: bool

    @property
    def monthly_low(self) -> float:
        """At 730 hours a month, running continuously."""
        return round(self.hourly_low * HOURS_PER_MONTH, 2)

    @property
    def monthly_high(self) -> float:
        """At 730 hours a month, running continuously."""
        return round(self.hourly_high * HOURS_PER_MONTH, 2)


def cost(accelerator: Accelerator, nodes: int) -> Cost:
    """Hourly and monthly cost of ``nodes`` GPU nodes of ``accelerator``."""
    p = accelerator.price
    return Cost(hourly_low=round(p.low * nodes, 2), hourly_high=round(p.high * nodes, 2), estimate=p.estimate)
