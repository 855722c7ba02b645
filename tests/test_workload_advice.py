"""Issue 37 §5: a stated workload gives an advisory prefill:decode ratio, every figure sourced or ESTIMATE."""

import math

import pytest

from k3infra.catalog import ACCELERATORS
from k3infra.catalog.gpus import GPU_RATES
from k3infra.sizing.workload import DECODE_HBM_EFFICIENCY, PREFILL_MFU
from tests.support import plan
from tests.test_topology import problems

WORKLOAD = ("topology.outputTokens=1024", "topology.requestsPerSecond=20")


def test_the_ratio_follows_from_each_role_s_rate_per_group() -> None:
    """gcp-a4xmax-pd at 20 requests/s of 8,192 tokens in and 1,024 out: a TEP8 prefill group of GB300s computes
    8 x 5,000 TFLOPS x 0.3 / (2 x 104 B) = 57,692 tokens/s, so 163,840 prompt tokens/s need 3 groups; a DEP16 decode
    group steps 512 sequences (32 per engine, under the 1,648 its KV cache holds at 9,216 tokens) every 201 GB / (8 TB/s
    x 0.6) = 41.8 ms, 12,250 tokens/s, so 20,480 output tokens/s need 2. The stack plans 1:1 and says so."""
    p = plan("gcp-a4xmax-pd", *WORKLOAD)
    top, w = p.config.sizing.topology, p.config.sizing.workload
    assert top is not None and w is not None
    rates = GPU_RATES[ACCELERATORS[p.config.accelerator.sku].gpu_model]
    prefill = 8 * rates.fp8_dense_tflops * 1e12 * PREFILL_MFU / (2 * 104e9)
    assert w.prefill.tokens_per_second_per_group == pytest.approx(prefill) and round(prefill) == 57692
    assert (w.prefill.demand_tokens_per_second, w.prefill.groups_needed) == (163_840, math.ceil(163_840 / prefill))
    assert round(w.decode.tokens_per_second_per_group) == 12250 and w.decode.groups_needed == 2
    assert "512 sequences in flight" in w.decode.terms and f"x {DECODE_HBM_EFFICIENCY:g} (ESTIMATE" in w.decode.terms
    assert w.ratio == "3:2"
    assert [x for x in p.warnings if x.startswith("topology: the stated workload")] == [
        "topology: the stated workload (20 requests/s, 8,192 tokens in, 1,024 out) needs prefill:decode groups 3:2; "
        "the stack plans 1:1 (advisory, ESTIMATE efficiencies: the plan's topology.workload)"]
    assert {r["role"]: r["groupsNeeded"] for r in p.config.sizing.as_dict()["topology"]["workload"]["roles"]} == {
        "prefill": 3, "decode": 2}


def test_every_gpu_rate_states_its_source() -> None:
    assert set(GPU_RATES) == {a.gpu_model for a in ACCELERATORS.values()}
    assert all(r.source and r.fp8_dense_tflops > 0 and r.hbm_tbps > 0 for r in GPU_RATES.values())


def test_a_light_workload_fits_the_planned_groups_without_a_warning() -> None:
    p = plan("gcp-a4xmax-pd", "topology.outputTokens=512", "topology.requestsPerSecond=1")
    assert p.config.sizing.workload is not None and p.config.sizing.workload.ratio == "1:1"
    assert not [x for x in p.warnings if "stated workload" in x]


@pytest.mark.parametrize("sets,expected", [
    (("topology.requestsPerSecond=5",), {"k3infra:topology.outputTokens"}),
    (("topology.outputTokens=512",), {"k3infra:topology.requestsPerSecond"}),
])
def test_half_a_workload_is_refused(sets: tuple[str, ...], expected: set[str]) -> None:
    assert set(problems("gcp-a4xmax-pd", *sets)) == expected


def test_a_workload_on_a_topology_without_roles_is_refused() -> None:
    assert set(problems("gcp-a4xmax", *WORKLOAD)) == {
        "k3infra:topology.outputTokens", "k3infra:topology.requestsPerSecond"}
