"""The routing sidecar's SSRF protection is on only where its allowlist watches the gateway's InferencePool API: at
the pinned v0.3.0 it watches inference.networking.x-k8s.io/v1alpha2, the gateway's pool is v1 (the independent review
of the PD stacks, M4: turning it on here would leave the sidecar exiting on an unsynced watch)."""

from k3infra.catalog.topologies import ROUTING_SIDECAR_SSRF_POOL_API, routing_sidecar_ssrf_args
from k3infra.serving.gateway import INFERENCE_API
from tests.support import plan


def test_ssrf_flags_only_where_the_watch_can_sync() -> None:
    assert INFERENCE_API == "inference.networking.k8s.io/v1"
    assert routing_sidecar_ssrf_args(INFERENCE_API, "k3", "k3-epp") == ()
    assert routing_sidecar_ssrf_args(ROUTING_SIDECAR_SSRF_POOL_API, "k3", "k3-epp") == (
        "--enable-ssrf-protection", "--inference-pool-namespace=k3", "--inference-pool-name=k3-epp")


def test_decode_sidecar_renders_without_ssrf_flags_behind_the_v1_pool() -> None:
    rec = plan("gcp-a4xmax-pd").recording
    lws = next(r for r in rec.ordered() if r.name == "k3-decode-workload")
    leader = lws.inputs["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    sidecar = next(c for c in leader["initContainers"] if c["name"] == "routing-proxy")
    assert not [a for a in sidecar["args"] if "ssrf" in a or "inference-pool" in a]
