"""The ``k3infra`` command: stacks, offline plans and rendered manifests, with no credentials and no network.

Exit codes: 0 done; 2 the configuration (or the stack reference) is wrong, every problem printed with its
key; 1 anything else.
"""

import gc
import json
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from . import planning, sdk_imports, timeline
from .catalog import HF_SYNC_GBPS
from .sizing import Sizing, sync_seconds
from . import render as rendering
from .config import ConfigError
from .config.model import AutoscalingConfig
from .formatting import duration as _duration, money as _money
from .stack_files import StackFileError

app = typer.Typer(
    name="k3infra",
    help="Plan Kimi K3 deployments offline: stacks, sizing, cost and every resource, with no cloud account.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Wide when not a terminal (CI logs, pipes), and never wrap error lines: each problem stays one line.
# emoji=False: Rich would otherwise print `k3infra:cloud:` as a cloud symbol.
out = Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, emoji=False, soft_wrap=True)


class Format(StrEnum):
    """Output format."""

    table = "table"
    json = "json"


def _fail(code: int, message: str) -> NoReturn:
    err.print(escape(message))
    raise typer.Exit(code)


def _guard(fn: Any) -> Any:
    """Turn bad input into exit code 2 with a message, anything else into exit code 1 (no traceback)."""
    try:
        return fn()
    except ConfigError as e:
        _fail(2, e.render())
    except (StackFileError, planning.PlanInputError) as e:
        _fail(2, f"error: {e}")
    except typer.Exit:
        raise
    except Exception as e:  # noqa: BLE001 - the command line reports, it does not crash
        if os.environ.get("K3INFRA_DEBUG"):
            raise
        _fail(1, f"error: {type(e).__name__}: {e} (set K3INFRA_DEBUG=1 for the traceback)")


@app.command()
def stacks(fmt: Annotated[Format, typer.Option("--format", help="table or json")] = Format.table) -> None:
    """List the stacks: cloud, accelerator, nodes, whether Kimi K3 fits, and the monthly cost."""

    def go() -> None:
        root = planning.project_dir()
        rows: list[dict[str, Any]] = []
        for name in planning.stack_names(root):
            try:
                cfg = planning.validate(planning.load(name, root=root))
            except ConfigError as e:
                rows.append({"stack": name, "problems": len(e.problems)})
                continue
            s = cfg.sizing
            rows.append({
                "stack": name, "cloud": str(cfg.cloud), "platform": str(cfg.platform),
                "accelerator": cfg.accelerator.sku, "nodes": cfg.total_nodes, "fits": s.fit.fits,
                "monthlyCostLow": s.cost.monthly_low, "monthlyCostHigh": s.cost.monthly_high,
                "costEstimate": s.cost.estimate, "problems": 0,
            })
        if fmt == Format.json:
            sys.stdout.write(json.dumps(rows, indent=2) + "\n")
            return
        t = Table(title="k3infra stacks")
        for col in ("stack", "cloud", "platform", "accelerator", "nodes", "fits", "USD / month"):
            t.add_column(col, justify="right" if col in ("nodes", "USD / month") else "left")
        for r in rows:
            if r["problems"]:
                t.add_row(r["stack"], "", "", "", "", f"[red]{r['problems']} config problem(s)[/red]", "")
                continue
            cost = f"{_money(r['monthlyCostLow'])}-{_money(r['monthlyCostHigh'])}" + (" (est.)" if r["costEstimate"] else "")
            t.add_row(r["stack"], r["cloud"], r["platform"], r["accelerator"], str(r["nodes"]),
                      "yes" if r["fits"] else "[red]no[/red]", cost)
        out.print(t)

    _guard(go)


@app.command()
def init(
    template: Annotated[str, typer.Argument(help="a template from stacks/ (k3infra stacks lists them)")],
    stack: Annotated[str | None, typer.Option("--stack", help="the Pulumi stack's name (default: the template's)")] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite the stack's live configuration")] = False,
) -> None:
    """Start a stack from a template: copy stacks/Pulumi.TEMPLATE.yaml to live/Pulumi.STACK.yaml, the live
    configuration Pulumi reads and writes (Pulumi.yaml's stackConfigDir, ignored by git), then print the next steps."""

    def go() -> None:
        root = planning.project_dir()
        path = planning.init_stack(template, stack, root, force=force)
        name = stack or template
        rel = path.relative_to(root) if path.is_relative_to(root) else path
        out.print(f"wrote {escape(str(rel))} from stacks/Pulumi.{escape(template)}.yaml; next:")
        for step in (f"edit {rel} (the kubeconfig, the bucket, the image...)",
                     f"k3infra plan {name}",
                     f"pulumi stack init {name}",
                     f"pulumi config set --secret k3infra:hfToken ... -s {name}   (and the stack's other secrets)",
                     f"pulumi up -s {name}"):
            out.print(f"  {escape(step)}")

    _guard(go)


@app.command()
def plan(
    stack: Annotated[str, typer.Argument(help="a template from stacks/, a stack made by k3infra init, or the path "
                                           "of a stack file")],
    sets: Annotated[list[str] | None, typer.Option("--set", help="override a key: k3infra:nodes=3 or nodes=3 "
                                                   "(value parsed as YAML; capacity.subBlock=x sets a field)")] = None,
    fmt: Annotated[Format, typer.Option("--format", help="table or json")] = Format.table,
) -> None:
    """Validate, size and plan a stack offline: every resource, the sizing, the cost and the warnings."""

    def go() -> None:
        p = planning.plan(stack, sets or [])
        if fmt == Format.json:
            sys.stdout.write(json.dumps(p.to_json(), indent=2, ensure_ascii=False) + "\n")
            return
        _print_plan(p)

    _guard(go)


@app.command()
def render(
    stack: Annotated[str, typer.Argument(help="a template from stacks/, a stack made by k3infra init, or the path "
                                           "of a stack file")],
    out: Annotated[Path, typer.Option("--out", help="directory to write the YAML files into (created)")],
    sets: Annotated[list[str] | None, typer.Option("--set", help="override a key, as for plan")] = None,
) -> None:
    """Write every Kubernetes object the stack would create as YAML, one file per object, in apply order."""

    def go() -> None:
        p = planning.plan(stack, sets or [])
        paths = rendering.write(p.recording, out)
        for path in paths:
            typer.echo(str(path))
        charts = sum(1 for x in paths if x.name.endswith(".chart.yaml"))
        err.print(f"{len(paths) - charts} Kubernetes objects and {charts} Helm chart(s) written to {escape(str(out))}"
                  " in apply order (secret values masked)")
        if not paths:
            for w in p.warnings:
                err.print(f"[yellow]warning:[/yellow] {escape(w)}")

    _guard(go)


def _print_plan(p: planning.Plan) -> None:
    rec, cfg, s = p.recording, p.config, p.config.sizing
    resources = rec.ordered()
    tree = Tree(f"[bold]stack {escape(p.stack_file.stack)}[/bold] ({len(resources)} resources)")
    nodes: dict[str | None, Tree] = {None: tree}
    for r in resources:
        flags = [f for f, on in (("protect", r.protect), ("retain on delete", r.retain_on_delete)) if on]
        label = f"{escape(r.type)} [bold]{escape(r.name)}[/bold]" + (f" [yellow]({', '.join(flags)})[/yellow]" if flags else "")
        nodes[r.urn] = nodes.get(r.parent, tree).add(label)
    out.print(tree)
    for line in p.charts:
        out.print(f"[bold]chart[/bold] {escape(line)}")

    a, f, ly, ld, cs = s.accelerator, s.fit, s.layout, s.load, s.cold_start
    t = Table(title="sizing", show_header=False, title_justify="left")
    t.add_column("what", style="bold")
    t.add_column("value")
    t.add_row("model", f"{cfg.model.display_name} ({cfg.model.hf_id}), served as {cfg.model.served_model_name}")
    t.add_row("nodes", f"{s.nodes} x {a.sku} per replica x {s.replicas} replica(s): {a.gpus_per_node} x {a.gpu_model} "
                       f"{a.gpu_memory_gb:g} GB each, {a.cpu_arch}")
    t.add_row("fits", ("yes" if f.fits else "[red]no[/red]") +
              f": {f.usable_gb:,.0f} GB usable of {f.nominal_gb:,.0f} GB; weights {f.weights_gb:,.0f} + runtime "
              f"{f.overhead_gb:,.0f} GB leave {f.kv_headroom_gb:,.0f} GB KV cache (minimum {f.min_kv_cache_gb:g}); "
              f"fewest nodes that fit: {s.min_nodes}")
    t.add_row("layout", f"TP={ly.tensor_parallel} PP={ly.pipeline_parallel} EP={ly.expert_parallel} over {ly.interconnect}")
    t.add_row("mode", f"{ly.mode}: {ly.statement}")
    draft = cfg.model.draft_model_for(cfg.engine.name) if cfg.speculative_decoding else None
    speculative = f", speculative decoding {draft.algorithm} with {draft.hf_id}" if draft else ""
    t.add_row("engine", f"{cfg.engine.name} {cfg.image} (--load-format {cfg.load_format}){speculative}")
    t.add_row("load", f"{ld.loader}: {ld.bytes_per_node / 1e9:,.0f} GB per node at {ld.gbps:g} Gbps = {_duration(ld.seconds)} "
                      f"(optimistic {_duration(ld.optimistic_fetch_seconds + ld.local_read_seconds)}), then warm-up "
                      f"{_duration(cfg.engine.warmup_seconds)}")
    sy = s.sync
    if sy is not None:
        where = f"a pool of its own, {sy.nodes} x {sy.node.sku} from zero" if sy.pool else f"{sy.nodes} x {sy.node.sku}"
        t.add_row("sync", f"{sy.total_bytes / 1e9:,.0f} GB by {sy.workers} worker(s) x {sy.streams} streams on {where} "
                          f"at {sy.gbps:g} Gbps, limited by {sy.limit} = {_duration(sy.seconds)} (optimistic "
                          f"{_duration(sy.optimistic_seconds)}); Pulumi waits {_duration(sy.timeout_seconds)}")
    else:
        t.add_row("sync", f"not run by this stack (weights.sync false): a copy by hand at {HF_SYNC_GBPS:g} Gbps takes "
                          f"{_duration(sync_seconds(cfg.model, cfg.speculative_decoding))}")
    t.add_row("probe budget", f"{_duration(s.probe_budget_seconds)} start-up; Pulumi waits {_duration(s.await_timeout_seconds)}")
    path = " > ".join(p.name for p in cs.phases if p.critical)
    t.add_row("cold start", f"{_duration(cs.total_seconds)}, the critical path ({path}; bottleneck: {cs.bottleneck})"
                            + (f"; {cs.nothing_to_create}" if cs.nothing_to_create else ""))
    t.add_row("restart", f"{_duration(cs.restart_seconds)} (scheduling, load, warm-up; the image is on the node)"
              + _node_start_text(s))
    if cfg.autoscaling is not None:
        t.add_row("autoscaling", _autoscaling_text(cfg.autoscaling, cfg.replicas))
    c = s.cost
    t.add_row("cost", f"USD {_money(c.hourly_low)}-{_money(c.hourly_high)} per hour, {_money(c.monthly_low)}-"
                      f"{_money(c.monthly_high)} per month" + (" (estimate)" if c.estimate else "") + ", GPU nodes only")
    _topology_rows(t, s)
    out.print(t)
    out.print(timeline.render(cs))
    for w in p.warnings:
        out.print(f"[yellow]warning:[/yellow] {escape(w)}")
    billing = rec.outputs.get("billingAfterDestroy") or []
    for b in billing:
        out.print(f"[cyan]after destroy:[/cyan] {escape(str(b))}")


def _node_start_text(s: Sizing) -> str:
    """The restart beside its physical floor, a new replica's start, and where the weights come from (issue 40)."""
    ns = s.node_start
    if ns is None:
        return ""
    where = f"the weights from the node's copy in {ns.node_dir}" if ns.local else "the weights from the bucket"
    return (f"; floor {_duration(ns.floor_seconds)} (x{ns.ratio:g}); a new replica "
            f"{_duration(ns.scale_out_seconds)} after its nodes are ready; {where}")
def _topology_rows(t: Table, s: Sizing) -> None:
    """A row per role of a topology other than aggregated, and the KV transfer between the roles (docs/topologies.md)."""
    top = s.topology
    if top is None:
        return
    for r in top.roles:
        t.add_row(f"role {r.name}", f"{r.groups} group(s) x {r.nodes} node(s), {str(r.parallelism).upper()} TP="
                                    f"{r.tensor_parallel} DP={r.data_parallel} EP={r.expert_parallel}, KV headroom "
                                    f"{r.fit.kv_headroom_gb:,.0f} GB, all-to-all {r.all2all or 'in the TP group'} over "
                                    f"{r.carrier}; load {_duration(r.load_seconds)}, start-up budget "
                                    f"{_duration(r.probe_budget_seconds)}, restart "
                                    f"{_duration(r.restart_seconds)}")
    if top.transfer is not None:
        x = top.transfer
        t.add_row("kv transfer", f"{x.bytes_per_request / 1e9:,.3f} GB per request at {x.input_tokens:,} tokens over "
                                 f"{x.transport} at {x.gbps:,.0f} Gbps: {x.seconds * 1000:,.1f} ms (line rate, estimate)")
    t.add_row("aggregated", f"the same {top.total_nodes} nodes as {top.aggregated_replicas} aggregated replica(s) of "
                            f"{top.aggregated_nodes} node(s), at the same cost")
    w = s.workload
    if w is not None:
        t.add_row("workload", f"{w.requests_per_second:g} requests/s, {w.input_tokens:,} tokens in, {w.output_tokens:,} "
                              f"out: prefill:decode groups {w.ratio} (planned {w.prefill.groups_planned}:"
                              f"{w.decode.groups_planned}); a prefill group {w.prefill.tokens_per_second_per_group:,.0f} "
                              f"tokens/s, a decode group {w.decode.tokens_per_second_per_group:,.0f} (advisory, ESTIMATE "
                              "efficiencies; each term in the JSON plan's topology.workload)")


def _autoscaling_text(a: "AutoscalingConfig", replicas: int) -> str:
    """The scaler the stack runs (or would run, or why none) and what a new replica costs."""
    st = a.start
    start = (f"a new replica serves {_duration(st.total_seconds)} after scale-out (nodes already in the reserved "
             f"pool; scheduling {_duration(st.scheduling_seconds)}, image pull {_duration(st.image_pull_seconds)}, "
             f"load {_duration(st.load_seconds)}, warm-up {_duration(st.warmup_seconds)})")
    if not a.enabled:
        how = f"none: {a.why_none}" if a.why_none else f"with autoscaling.enabled, {a.scaler.mechanism}"
        return f"off ({replicas} replica(s), always); {how}; {start}"
    if a.roles:
        each = "; ".join(f"{r.role} {r.min_groups}-{r.max_groups} group(s) of {r.nodes} node(s) on {r.signal} at "
                         f"{r.target:g} per group (its own ScaledObject)" for r in a.roles)
        return (f"{a.scaler.mechanism}, one per role: {each}; scale-down after "
                f"{_duration(a.scale_down_delay_seconds)}; {start.replace('replica', 'group', 1)}")
    text = (f"{a.scaler.mechanism}: {a.min_replicas}-{a.max_replicas} replica(s) (the reserved capacity holds "
            f"{a.capacity_replicas}) on {a.signal} at {a.target:g} per replica, scale-down after "
            f"{_duration(a.scale_down_delay_seconds)}; {start}")
    if a.scale_to_zero:
        text += (f"; scale-to-zero after {_duration(a.scale_down_delay_seconds)} idle, and the first request after "
                 f"idle waits {_duration(st.first_request_seconds)} (the scaler's "
                 f"{_duration(st.reaction_seconds)}, then the whole start)")
    return text


class DiffFormat(StrEnum):
    """Output format of ``k3infra diff``."""

    text = "text"
    markdown = "markdown"
    json = "json"


@app.command()
def diff(
    base: Annotated[str, typer.Argument(help="the base plan: k3infra plan STACK --format json > base.json")],
    head: Annotated[str, typer.Argument(help="the head plan, the same way")],
    fmt: Annotated[DiffFormat, typer.Option("--format", help="text, markdown (a PR comment) or json")] = DiffFormat.text,
    exit_code: Annotated[bool, typer.Option("--exit-code", help="exit 1 when the plans differ")] = False,
    max_chars: Annotated[int | None, typer.Option("--max-chars", min=1000, help="markdown: keep the output under "
                                                  "this many characters (a PR comment holds 65,536)")] = None,
) -> None:
    """What changes between two offline plans: resources added, removed, replaced and changed, with the
    property paths and old and new values (secrets masked), stack outputs and warnings."""
    from . import plandiff

    def go() -> None:
        try:
            d = plandiff.diff_plans(plandiff.load(base), plandiff.load(head))
        except plandiff.PlanFormatError as e:
            _fail(2, f"error: {e}")
        if fmt == DiffFormat.json:
            sys.stdout.write(json.dumps(d.to_json(), indent=2, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(plandiff.render_markdown(d, max_chars=max_chars) if fmt == DiffFormat.markdown
                             else plandiff.render_text(d))
        if exit_code and not d.empty:
            raise typer.Exit(1)

    _guard(go)


@app.command()
def verify(
    base_url: Annotated[str, typer.Option("--base-url", help="the endpoint: http://host:8000 or http://host:8000/v1")],
    model: Annotated[str, typer.Option("--model", help="served model name /v1/models must list, e.g. Kimi-K3")],
    api_key: Annotated[str | None, typer.Option("--api-key", envvar="K3INFRA_API_KEY",
                                                help="bearer token (or K3INFRA_API_KEY)")] = None,
    long_context_tokens: Annotated[int | None, typer.Option(
        "--long-context-tokens", min=256, help="prompt length of the long-context request (default: 3/4 of the "
        "max_model_len the server lists, at most 65,536)")] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=0.1, help="seconds per request")] = 300.0,
    retries: Annotated[int, typer.Option("--retries", min=0, help="retries with exponential backoff")] = 2,
    metrics_url: Annotated[str | None, typer.Option("--metrics-url", help="Prometheus metrics URL, "
                                                    "when not BASE/metrics (e.g. behind a gateway)")] = None,
    replica_metrics: Annotated[list[str] | None, typer.Option(
        "--replica-metrics", help="one replica's /metrics URL, repeated per replica: with two or more, the routing "
        "check sends requests sharing a prefix and expects one replica's cache hits to move")] = None,
    fmt: Annotated[Format, typer.Option("--format", help="table or json")] = Format.table,
) -> None:
    """Check a live endpoint against 002 §7: models, health, tool calls, reasoning, long context, prefix cache; and
    prefix-aware routing across replicas (--replica-metrics)."""
    from . import verify as checklist  # imports the openai client; keep the other commands light

    def go() -> None:
        settings = checklist.Settings(base_url=base_url, model=model, api_key=api_key,
                                      long_context_tokens=long_context_tokens, timeout=timeout, retries=retries,
                                      metrics_url=metrics_url, replica_metrics_urls=tuple(replica_metrics or ()))
        try:
            report = checklist.verify(settings)
        except ValueError as e:
            _fail(2, f"error: {e}")
        if fmt == Format.json:
            sys.stdout.write(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
        else:
            t = Table(title=f"k3infra verify {escape(base_url)} ({escape(model)})")
            for col in ("check", "result", "seconds", "evidence"):
                t.add_column(col, justify="right" if col == "seconds" else "left", overflow="fold")
            for c in report.checks:
                t.add_row(c.name, "[green]PASS[/green]" if c.passed else "[red]FAIL[/red]", f"{c.seconds:.1f}",
                          escape(c.evidence))
            out.print(t)
            out.print("[green]all checks passed[/green]" if report.passed
                      else f"[red]failed: {', '.join(report.failed)}[/red]")
        if not report.passed:
            raise typer.Exit(1)

    _guard(go)


@app.command()
def status(
    stack: Annotated[str, typer.Argument(help="a template from stacks/, a stack made by k3infra init, or the path "
                                           "of a stack file")],
    kubeconfig: Annotated[Path | None, typer.Option("--kubeconfig", help="the cluster's kubeconfig (default: the "
                                                    "stack's kubeconfig output, through the Pulumi CLI)")] = None,
    context: Annotated[str | None, typer.Option("--context", help="a kubeconfig context other than the current")] = None,
    pulumi_stack: Annotated[str | None, typer.Option("--pulumi-stack", "-s", help="the Pulumi stack to read the "
                                                     "outputs of (default: the stack file's name)")] = None,
    sets: Annotated[list[str] | None, typer.Option("--set", help="override a key, as for plan")] = None,
    fmt: Annotated[Format, typer.Option("--format", help="table or json")] = Format.table,
    watch: Annotated[bool, typer.Option("--watch", help="a live display, refreshed until serving or failed")] = False,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="--watch: stop after this many seconds")] = 3600,
    print_role: Annotated[bool, typer.Option("--print-role", help="print the read-only ClusterRole and Role "
                                             "status needs (YAML for kubectl apply) and exit")] = False,
) -> None:
    """Where a deployed stack is in its cold start: capacity, nodes, placement check, weight copy, each server
    rank's phase against its budget, the verify Job, the endpoint. Reads the cluster through the stack's kubeconfig
    output (`pulumi stack output`, in the project directory) or --kubeconfig, with a read-only role (--print-role,
    or the stack's own with k3infra:status.group); the objects to look at come from the stack's own plan. Exit 0
    serving, 1 failed (the line says what and where to look), 2 the stack or its outputs cannot be read, 3 in
    progress. The weight copy's byte progress and the capacity window are read with this machine's credentials and
    the cloud's SDK; without them those lines say so and the report goes on."""
    from .status import command

    def go() -> None:
        try:
            code = command.run(command.Request(
                stack=stack, sets=tuple(sets or ()), kubeconfig=kubeconfig, context=context,
                pulumi_stack=pulumi_stack, fmt=fmt.value, watch=watch, timeout=timeout, print_role=print_role), out)
        except command.CommandError as e:
            _fail(e.code, f"error: {e}")
        raise typer.Exit(code)

    _guard(go)


def main() -> None:
    """Entry point of the ``k3infra`` command and ``python -m k3infra``.

    The collector is off for this short-lived process, and the process ends without the interpreter's
    teardown: the provider SDKs define tens of thousands of classes at import, and collecting during those
    imports, then freeing them all at exit, cost about 2.5 s of a 7 s cold plan. The SDKs' service packages
    load only the resource modules the command uses (:mod:`k3infra.sdk_imports`).
    """
    gc.disable()
    sdk_imports.install()
    try:
        app()
    except SystemExit as e:
        code = e.code
    else:
        code = 0
    if isinstance(code, str):
        sys.stderr.write(code + "\n")
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)


if __name__ == "__main__":
    main()
