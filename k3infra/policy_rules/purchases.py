"""``capacity-purchase-flagged``: an EC2 Capacity Block purchase (non-refundable) or an Azure capacity
reservation (billed from creation) is flagged (advisory: the stack asked for it explicitly).
"""

from typing import Any, Iterator, Mapping, Sequence

from .base import Resource, get


def check_capacity_purchases(resources: Sequence[Resource], _config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``capacity-purchase-flagged``."""
    for r in resources:
        if r.type == "aws:ec2/capacityBlockReservation:CapacityBlockReservation":
            yield (f"{r.name} purchases an EC2 Capacity Block (offering {get(r.props, 'capacityBlockOfferingId')}): "
                   "paid up front, non-refundable, and `pulumi destroy` does not cancel it"), r.urn
        elif r.type == "azure-native:compute:CapacityReservation":
            sku = get(r.props, "sku", {})
            yield (f"{r.name} creates an Azure capacity reservation ({get(sku, 'capacity')} x {get(sku, 'name')}): "
                   "billed from creation whether used or not"), r.urn
