"""The alerts of a disaggregated topology (issue 37): the KV transfer between its roles (NIXL failing, slow, or the
prefilled KV expiring before the decode reads it), and each role on its own (no server of the role, its queue growing).

The transfer's metrics are vLLM NixlConnector's (``catalog.metrics.NIXL``, ``NIXL_SOURCE``); a role's series are told
apart by the pods' ``llm-d.ai/role``, which each cloud's scrape object copies onto them as ``llm_d_ai_role``
(``observability.scrape.server_targets``). An aggregated or wide-EP stack gets none of these: ``role_alerts`` is empty.
"""

import math

from ..catalog import EngineName
from ..catalog.metrics import ENGINE_METRICS, NIXL, NIXL_XFER_TIME_BUCKETS
from ..catalog.topologies import VLLM_NIXL_SIDE_CHANNEL_PORT, KvTransport
from ..config import StackConfig
from ..sizing import KvTransfer
from .rules import Alert
from .scrape import ROLE_SERIES_LABEL

KV_TRANSFER_FAILING_MINUTES = 5
"""How long NIXL transfers may fail before the alert fires: failures are "sporadic lower-transport-layer events"
(vLLM's own word, ``nixl/stats.py``), so one window of them is not yet an outage."""
KV_TRANSFER_SLOW_MULTIPLE = 4
"""ESTIMATE: the p99 transfer time alerts at this multiple of one GPU's share of the plan's line-rate figure
(``kv_transfer_bound``): 1.25 for protocol overhead (NIXL's descriptors, RDMA reads of many blocks) and the rest for
two or three transfers sharing a GPU's NIC at once, a burst of long prompts."""
KV_TRANSFER_SLOW_MINUTES = 10
KV_EXPIRED_MINUTES = 10
"""How long prefilled KV may keep expiring before the decode read it (NixlConnector's ``kv_lease_duration``, 30 s by
default, vllm 0.33.0 ``nixl/base_scheduler.py`` line 82) before the alert fires."""
QUEUE_GROWING_MINUTES = 10
"""The window a role's queue must stay non-empty and end longer than it began."""

_TRANSPORT_CHECKS = {
    KvTransport.UCX_RDMA: "NIXL's UCX backend over RDMA (UCX_TLS=rc,cuda_copy in the pods: the RDMA devices claimed, "
                          "ucx_info -d listing the rc transport, UCX_LOG_LEVEL=info in the engine log)",
    KvTransport.LIBFABRIC: "NIXL's LIBFABRIC backend over EFA (FI_PROVIDER=efa and the EFA devices in the pods, "
                           "fi_info -p efa, IPC_LOCK; the nodes' security group allowing all traffic between its "
                           "members)",
    KvTransport.TCP: "NIXL's UCX backend over TCP on the pod network (UCX_TLS=tcp,cuda_copy; the nodes' network "
                     "throughput and drops)",
}


def _peer_checks(transport: KvTransport) -> str:
    """What a person looks at when the transfer between the roles breaks: the side channel, the transport, the
    NetworkPolicy rule that admits the other role."""
    return (f"Check the NIXL side channel (port {VLLM_NIXL_SIDE_CHANNEL_PORT} plus the DP rank on every engine pod, "
            "VLLM_NIXL_SIDE_CHANNEL_PORT: the decode's handshake errors in its log), the transport: "
            f"{_TRANSPORT_CHECKS[transport]}, and each role's NetworkPolicy peer rule "
            "(serving/server_network_policy.py: pods labelled app.kubernetes.io/component=model-server admitted on "
            "every port; kubectl get networkpolicy -o yaml).")


def kv_transfer_bound(transfer: KvTransfer, gpus_per_node: int) -> tuple[float, str]:
    """The p99 transfer time the slow-transfer alert fires above, and its comparison. One NIXL transfer is one
    request's KV read by one decode rank: vLLM keeps MLA's whole latent on every rank (sizing.topology
    ``concurrent_requests``), so a read moves about the plan's ``bytesPerRequest``, over that GPU's own NIC, while the
    plan's ``seconds`` is at the whole node's line rate. One GPU's share is ``seconds x gpus_per_node``; the bound is
    ``KV_TRANSFER_SLOW_MULTIPLE`` times that, raised to the next bound of the histogram's buckets, so that "p99 above
    it" means exactly "over 1 % of the transfers took longer" (no interpolation inside a bucket). Beyond the last
    finite bucket, 5 s, ``histogram_quantile`` reports 5 s: the alert then fires at ``>=`` 5 s."""
    wanted = KV_TRANSFER_SLOW_MULTIPLE * transfer.seconds * gpus_per_node
    for edge in NIXL_XFER_TIME_BUCKETS:
        if edge >= wanted:
            return edge, ">"
    return NIXL_XFER_TIME_BUCKETS[-1], ">="


def kv_transfer_alerts(namespace: str, transfer: KvTransfer, gpus_per_node: int) -> list[Alert]:
    """NIXL transfers failing, their p99 above ``kv_transfer_bound``, prefilled KV expiring unread. Selected by the
    namespace alone: the reader (the decode) records the transfers, the prefill the expiries."""
    sel = f'{{namespace="{namespace}"}}'
    bound, op = kv_transfer_bound(transfer, gpus_per_node)
    checks = _peer_checks(transfer.transport)
    line_ms = transfer.seconds * 1e3
    return [
        Alert(
            name="KimiK3KvTransferFailing",
            expr=f"sum(rate({NIXL.failed_transfers}{sel}[5m])) > 0",
            for_seconds=KV_TRANSFER_FAILING_MINUTES * 60,
            severity="critical",
            summary=f"NIXL KV transfers from the prefill to the decode role in {namespace} have been failing for "
                    f"{KV_TRANSFER_FAILING_MINUTES} minutes (failed reads, handshakes or notifications): each fails "
                    f"its request (kv_load_failure_policy fail). {checks}",
            cluster_wide=False,
        ),
        Alert(
            name="KimiK3KvTransferSlow",
            expr=(f"histogram_quantile(0.99, sum by (le) (rate({NIXL.xfer_time}_bucket{sel}[5m]))) {op} {bound:g}"),
            for_seconds=KV_TRANSFER_SLOW_MINUTES * 60,
            severity="warning",
            summary=f"Over 1 % of the NIXL KV transfers in {namespace} have taken longer than {bound:g} s for "
                    f"{KV_TRANSFER_SLOW_MINUTES} minutes: the plan's figure is {line_ms:.1f} ms per request at the "
                    f"node's line rate over {transfer.transport} (ESTIMATE), and the bound is "
                    f"{KV_TRANSFER_SLOW_MULTIPLE} times one GPU's share of it; time to first token grows with it. The "
                    f"transfer fell back to a slower path or shares its link. {checks}",
            cluster_wide=False,
        ),
        Alert(
            name="KimiK3KvTransferExpired",
            expr=f"sum(rate({NIXL.kv_expired_requests}{sel}[5m])) > 0",
            for_seconds=KV_EXPIRED_MINUTES * 60,
            severity="warning",
            summary=f"Prefilled KV in {namespace} keeps expiring before the decode role reads it (NixlConnector's "
                    "kv_lease_duration, 30 s): the decode is saturated (its queue, KimiK3DecodeQueueGrowing) or the "
                    f"transfers stall; the prefill's work is lost. {checks}",
            cluster_wide=False,
        ),
    ]


def role_health_alerts(engine: EngineName, namespace: str, role: str, *, ready_budget_seconds: int) -> list[Alert]:
    """One role on its own: no series of the role's servers for longer than the role's start-up budget (the engine
    exports only once loaded), and its queue never empty and longer at the end of ``QUEUE_GROWING_MINUTES``."""
    m = ENGINE_METRICS[engine]
    sel = f'{{namespace="{namespace}",{ROLE_SERIES_LABEL}="{role}"}}'
    title, window = role.capitalize(), f"{QUEUE_GROWING_MINUTES}m"
    return [
        Alert(
            name=f"KimiK3{title}NotReady",
            expr=f"absent({m.running}{sel})",
            for_seconds=ready_budget_seconds,
            severity="critical",
            summary=f"No {role} server in {namespace} has exported metrics for longer than the role's start-up budget "
                    f"({math.ceil(ready_budget_seconds / 60)} minutes): the {role} role is down or not ready, and no "
                    f"request crosses the roles (kubectl get pods -l llm-d.ai/role={role}, their events and engine "
                    "logs).",
            cluster_wide=False,
        ),
        Alert(
            name=f"KimiK3{title}QueueGrowing",
            expr=f"sum(min_over_time({m.waiting}{sel}[{window}])) > 0 and sum(delta({m.waiting}{sel}[{window}])) > 0",
            for_seconds=QUEUE_GROWING_MINUTES * 60,
            severity="warning",
            summary=f"The {role} role's queue in {namespace} has not emptied for {QUEUE_GROWING_MINUTES} minutes and "
                    f"keeps growing: the {role} groups are short of capacity for the traffic (add a {role} group, or "
                    "change the prefill:decode ratio, docs/topologies.md), or a transfer stalls them "
                    "(KimiK3KvTransferSlow).",
            cluster_wide=False,
        ),
    ]


def role_alerts(cfg: StackConfig) -> list[Alert]:
    """Every alert of a disaggregated stack's roles and the transfer between them (the transfer's only with vLLM,
    whose NixlConnector exports them); none for an aggregated or wide-EP stack."""
    top = cfg.sizing.topology
    if not cfg.topology.disaggregated or top is None:
        return []
    out: list[Alert] = []
    if top.transfer is not None and cfg.engine.name == EngineName.VLLM:
        out += kv_transfer_alerts(cfg.namespace, top.transfer, cfg.accelerator.gpus_per_node)
    for role in top.roles:
        out += role_health_alerts(cfg.engine.name, cfg.namespace, role.name,
                                  ready_budget_seconds=role.probe_budget_seconds)
    return out
