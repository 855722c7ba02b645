"""Print each disaggregated stack's topology beside the aggregated plan of the same hardware: per role the groups,
GPUs, layout, fit, KV headroom and start; the KV cache one request moves between the roles and its time on the link;
how many requests of that length each side's KV cache holds at once; and the cost per hour.

Every figure is the plan's own (``k3infra plan STACK --format json`` under ``sizing.topology``): catalog facts and the
sizing's arithmetic (ESTIMATEs marked there), nothing measured. The concurrency is a throughput-relevant figure, not a
rate: KV headroom over one request's bytes.

With ``--workload OUTPUT_TOKENS REQUESTS_PER_SECOND`` each stack also prints the advisory prefill:decode ratio of
that workload (sizing.workload: each role's rate per group at ESTIMATE efficiencies).

    python benchmarks/topology.py [STACK...] [--input-tokens N] [--workload OUTPUT_TOKENS RPS]
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from k3infra import planning  # noqa: E402
from k3infra.formatting import duration  # noqa: E402
from k3infra.sizing import concurrent_requests  # noqa: E402

STACKS = ("gcp-a4xmax-pd", "azure-gb300-pd", "aws-eks-pd", "kubernetes-gb300-nvl72-pd")


def report(stack: str, input_tokens: int | None, workload: tuple[str, str] | None = None) -> list[str]:
    """The lines of one stack."""
    sets = [f"topology.inputTokens={input_tokens}"] if input_tokens else []
    if workload:
        sets += [f"topology.outputTokens={workload[0]}", f"topology.requestsPerSecond={workload[1]}"]
    cfg = planning.validate(planning.load(stack, sets, root=ROOT))
    top = cfg.sizing.topology
    if top is None:
        return [f"{stack}: aggregated (no topology)"]
    a = cfg.accelerator
    lines = [f"{stack}: {top.mode} on {top.total_nodes} x {a.sku}, USD {top.cost.hourly_low:,.0f}-"
             f"{top.cost.hourly_high:,.0f} per hour"]
    t = top.transfer
    for r in top.roles:
        held = (f", holds {concurrent_requests(r.fit, t, r.tensor_parallel, data_parallel=r.data_parallel) * r.groups:,}"
                " requests") if t else ""
        lines.append(f"  {r.name:<8} {r.groups} x {r.nodes} node(s) {r.parallelism.upper()} TP={r.tensor_parallel} "
                     f"DP={r.data_parallel} EP={r.expert_parallel}; {r.fit.weights_gb / r.fit.gpus:,.1f} GB weights "
                     f"per GPU, KV headroom {r.fit.kv_headroom_gb:,.0f} GB{held}; all-to-all "
                     f"{r.all2all or 'inside the TP group'} over {r.carrier}; load {duration(r.load_seconds)}, "
                     f"restart {duration(r.restart_seconds)}")
    if t is not None:
        lines.append(f"  KV per request at {t.input_tokens:,} tokens: {t.bytes_per_request / 1e9:,.3f} GB "
                     f"({t.bytes_per_token:,} B/token + {t.state_bytes / 1e6:,.0f} MB KDA state) over {t.transport} at "
                     f"{t.gbps:,.0f} Gbps = {t.seconds * 1000:,.1f} ms (line rate, ESTIMATE)")
    agg = f"  aggregated, same nodes: {top.aggregated_replicas} x {top.aggregated_nodes} node(s), KV headroom " \
          f"{top.aggregated_fit.kv_headroom_gb:,.0f} GB each"
    if t is not None:
        held = concurrent_requests(top.aggregated_fit, t, top.aggregated_tensor_parallel,
                                   top.aggregated_pipeline_parallel) * top.aggregated_replicas
        agg += f", holds {held:,} requests"
    lines.append(agg + ", same cost")
    w = cfg.sizing.workload
    if w is not None:
        lines.append(f"  workload {w.requests_per_second:g} req/s, {w.input_tokens:,} in / {w.output_tokens:,} out: "
                     f"prefill:decode groups {w.ratio} (planned {w.prefill.groups_planned}:{w.decode.groups_planned}); "
                     f"prefill {w.prefill.tokens_per_second_per_group:,.0f} tokens/s per group, decode "
                     f"{w.decode.tokens_per_second_per_group:,.0f} (ESTIMATE efficiencies)")
    return lines


def main(argv: list[str]) -> None:
    tokens = None
    if "--input-tokens" in argv:
        i = argv.index("--input-tokens")
        tokens = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    workload = None
    if "--workload" in argv:
        i = argv.index("--workload")
        workload = (argv[i + 1], argv[i + 2])
        argv = argv[:i] + argv[i + 3:]
    for stack in argv or STACKS:
        print("\n".join(report(stack, tokens, workload)))


if __name__ == "__main__":
    main(sys.argv[1:])
