"""How each EC2 GPU instance type lays out its network cards, and the launch-template interfaces that follow.

EKS rules (EKS User Guide node-efa, launch-templates): the primary
interface is device 0 on card 0; every further card gets one interface at device index 1; ``efa-only``
interfaces carry RDMA without taking an IP address (VPC CNI >= 1.18.5); a card that is ENA-only cannot
take an EFA interface; the launch template names no subnet (EKS sets it) and the security groups go on
the interfaces, not at instance level.
"""

from dataclasses import dataclass

from ..catalog.topologies import KvTransport
from ..config import StackConfig


@dataclass(frozen=True)
class EfaLayout:
    """The network cards of one instance type."""

    instance_type: str
    network_cards: int
    """Network cards of the instance, card 0 included."""
    card0_efa: bool
    """Whether card 0 can carry EFA (False where card 0 is ENA only)."""
    source: str

    @property
    def efa_devices(self) -> int:
        """EFA devices a pod on this node can request as ``vpc.amazonaws.com/efa``."""
        return self.network_cards - (0 if self.card0_efa else 1)


EFA_LAYOUTS: dict[str, EfaLayout] = {
    l.instance_type: l
    for l in (
        EfaLayout(
            instance_type="p6-b300.48xlarge",
            network_cards=17,
            card0_efa=False,
            source="EC2 User Guide, EFA configuration for P6-B300: card 0 ENA only (350 Gbps), cards 1-16 "
                   "400 Gbps EFA each (docs/catalog-research.md §1.1)",
        ),
        EfaLayout(
            instance_type="p5en.48xlarge",
            network_cards=16,
            card0_efa=True,
            source="EC2 instance types table: 16 network cards, 3,200 Gbps EFAv3; the per-card layout follows "
                   "P5 (card 0 EFA with ENA). UNCONFIRMED for p5en (docs/catalog-research.md §1.3)",
        ),
    )
}


@dataclass(frozen=True)
class Interface:
    """One launch-template network interface (plain values; the component turns it into SDK args)."""

    device_index: int
    network_card_index: int
    interface_type: str | None
    """``efa``, ``efa-only``, or None for a plain ENA interface."""


def interfaces(instance_type: str) -> list[Interface]:
    """The interfaces of a launch template for ``instance_type``: every card, EFA wherever it can be."""
    layout = EFA_LAYOUTS.get(instance_type)
    if layout is None:
        raise KeyError(f"no EFA layout for {instance_type}; known: {', '.join(EFA_LAYOUTS)}")
    out = [Interface(device_index=0, network_card_index=0, interface_type="efa" if layout.card0_efa else None)]
    out += [Interface(device_index=1, network_card_index=card, interface_type="efa-only")
            for card in range(1, layout.network_cards)]
    return out


def needs_efa(cfg: StackConfig) -> bool:
    """The GPU pods get EFA (devices, ``IPC_LOCK``, ``FI_PROVIDER=efa``: nodegroup ``efa_device_plugin``) where any
    group spans nodes (the aggregated replica, or a role's group of the topology), or where a disaggregated
    topology's KV transfer rides EFA (NIXL's LIBFABRIC backend; llm-d guides/pd-disaggregation
    ``modelserver/gpu/vllm/aws/patch-decode.yaml`` pairs it with ``IPC_LOCK``). Not ``cfg.nodes`` alone: on a
    disaggregated stack that is one role's group (the independent review of the PD stacks, M2)."""
    top = cfg.sizing.topology
    roles = top.roles if top is not None else ()
    return (cfg.nodes > 1 or any(r.nodes > 1 for r in roles)
            or (cfg.topology.disaggregated and cfg.topology.transport == KvTransport.LIBFABRIC))
