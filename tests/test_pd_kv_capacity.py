"""A TEP group's concurrent requests count the MLA latent on every tensor-parallel rank (vllm 0.33.0
``config/model.py`` ``get_num_kv_heads`` returns 1 under MLA) and KDA's state split over the ranks (the independent
review of the PD stacks, m1)."""

from k3infra.catalog import GB
from tests.support import plan


def test_aws_eks_pd_concurrent_requests_per_rank() -> None:
    p = plan("aws-eks-pd")
    top = p.config.sizing.topology
    t = top.transfer
    roles = {r.name: r for r in top.roles}
    prefill, decode = roles["prefill"], roles["decode"]
    assert (prefill.tensor_parallel, decode.tensor_parallel, decode.data_parallel) == (8, 1, 16)
    per_gpu = prefill.fit.kv_headroom_gb * GB / prefill.fit.gpus
    rank_bytes = t.input_tokens * t.bytes_per_token + t.state_bytes / 8
    want_prefill = int(per_gpu // rank_bytes) * prefill.groups
    d = top.as_dict(p.config.accelerator)
    assert d["concurrentRequests"]["prefill"] == want_prefill == 434
    # the old pooled figure (the group's headroom over one request's bytes) is 2.4x it
    assert int(prefill.fit.kv_headroom_gb * GB // t.bytes_per_request) == 1046
    assert d["concurrentRequests"]["decode"] == 1920
    assert d["aggregated"]["concurrentRequests"] == 1302  # TP 8 replicas, per rank as well (was 3138)
