"""An advisory prefill:decode ratio for a stated workload (issue 37 §5): how many prefill groups and decode groups the
requests per second at the stated input and output lengths need, from each role's throughput per group at the
pessimistic end of estimated efficiencies. A hint for choosing ``topology.<role>.groups``, not a measurement.

Pure: catalog facts (catalog.gpus GPU_RATES, the model's active parameters, the recipe's decode batch) and numbers.
"""

import math
from dataclasses import dataclass

from ..catalog import GB, Accelerator, Model
from ..catalog.gpus import GPU_RATES
from .topology import KvTransfer, RoleSizing, concurrent_requests

PREFILL_MFU = 0.3
"""ESTIMATE: the share of a GPU's dense FP8 throughput a prefill of a sparse MoE sustains (attention, expert
dispatch and the all-reduce or all-to-all between layers take the rest): 0.3 at the pessimistic end."""

DECODE_HBM_EFFICIENCY = 0.6
"""ESTIMATE: the share of HBM bandwidth a decode step reads weights at (kernel launches, the all-to-all and the KV
reads take the rest): 0.6 at the pessimistic end."""


@dataclass(frozen=True)
class RoleThroughput:
    """One role's tokens per second per group, and the groups the workload needs of it."""

    role: str
    tokens_per_second_per_group: float
    demand_tokens_per_second: float
    groups_needed: int
    groups_planned: int
    terms: str
    """How the rate follows, with each figure's source or ESTIMATE."""

    def as_dict(self) -> dict[str, object]:
        """The plan's entry for the role."""
        return {"role": self.role, "tokensPerSecondPerGroup": round(self.tokens_per_second_per_group),
                "demandTokensPerSecond": round(self.demand_tokens_per_second), "groupsNeeded": self.groups_needed,
                "groupsPlanned": self.groups_planned, "terms": self.terms}


@dataclass(frozen=True)
class WorkloadAdvice:
    """The advisory ratio of a stated workload."""

    input_tokens: int
    output_tokens: int
    requests_per_second: float
    prefill: RoleThroughput
    decode: RoleThroughput

    @property
    def ratio(self) -> str:
        """prefill:decode groups the workload needs."""
        return f"{self.prefill.groups_needed}:{self.decode.groups_needed}"

    def as_dict(self) -> dict[str, object]:
        """The plan's ``topology.workload``."""
        return {"inputTokens": self.input_tokens, "outputTokens": self.output_tokens,
                "requestsPerSecond": self.requests_per_second, "ratio": self.ratio,
                "roles": [self.prefill.as_dict(), self.decode.as_dict()],
                "estimate": "advisory: ESTIMATE efficiencies (sizing.workload PREFILL_MFU, DECODE_HBM_EFFICIENCY)"}


def _prefill(role: RoleSizing, model: Model, a: Accelerator, demand: float) -> RoleThroughput:
    rates = GPU_RATES[a.gpu_model]
    per_group = role.gpus_per_group * rates.fp8_dense_tflops * 1e12 * PREFILL_MFU / (2 * model.active_params)
    terms = (f"{role.gpus_per_group} GPUs x {rates.fp8_dense_tflops:,.0f} TFLOPS dense FP8 ({rates.source}) x "
             f"{PREFILL_MFU:g} (ESTIMATE) / (2 x {model.active_params / 1e9:,.0f} B active parameters "
             f"({model.sources.get('active_params', '')}))")
    return RoleThroughput(role.name, per_group, demand, math.ceil(demand / per_group), role.groups, terms)


def _decode(role: RoleSizing, model: Model, a: Accelerator, demand: float, context: KvTransfer,
            max_num_seqs: int) -> RoleThroughput:
    rates = GPU_RATES[a.gpu_model]
    engines = role.data_parallel  # a DEP group runs one engine per GPU; a TEP group one engine over all of them
    weights_per_gpu = role.fit.weights_gb * GB / role.gpus_per_group
    step = weights_per_gpu / (rates.hbm_tbps * 1e12 * DECODE_HBM_EFFICIENCY)
    held = concurrent_requests(role.fit, context, role.tensor_parallel, data_parallel=role.data_parallel)
    batch = min(max_num_seqs * engines, held)
    per_group = batch / step if step else 0.0
    terms = (f"{batch} sequences in flight (the recipe's --max-num-seqs {max_num_seqs} x {engines} engine(s), at most "
             f"the {held} the KV cache holds at {context.input_tokens:,} tokens) per step of "
             f"{weights_per_gpu / 1e9:,.0f} GB read per GPU at {rates.hbm_tbps:g} TB/s x {DECODE_HBM_EFFICIENCY:g} "
             f"(ESTIMATE; {rates.source}) = {step * 1e3:,.1f} ms")
    needed = math.ceil(demand / per_group) if per_group else 0
    return RoleThroughput(role.name, per_group, demand, needed, role.groups, terms)


def workload_advice(model: Model, accelerator: Accelerator, prefill: RoleSizing, decode: RoleSizing,
                    context: KvTransfer, output_tokens: int, requests_per_second: float,
                    max_num_seqs: int) -> WorkloadAdvice:
    """The groups of each role ``requests_per_second`` requests of ``context.input_tokens`` in and ``output_tokens``
    out need; ``context`` is the KV of a whole sequence (input plus output), ``max_num_seqs`` the decode engine's."""
    input_tokens = context.input_tokens - output_tokens
    return WorkloadAdvice(
        input_tokens=input_tokens, output_tokens=output_tokens, requests_per_second=requests_per_second,
        prefill=_prefill(prefill, model, accelerator, requests_per_second * input_tokens),
        decode=_decode(decode, model, accelerator, requests_per_second * output_tokens, context, max_num_seqs))


__all__ = ["DECODE_HBM_EFFICIENCY", "PREFILL_MFU", "RoleThroughput", "WorkloadAdvice", "workload_advice"]
