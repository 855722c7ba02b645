"""``k3infra status``, end to end: plan the stack, find its cluster (``--kubeconfig`` or the stack's outputs), read
the capacity once, then report (once, or live with ``--watch``).

Kubernetes stacks and HyperPod (whose InferenceEndpointConfig lives on the EKS cluster) are read from the cluster;
PAI-EAS has no cluster and is read from the EAS API (``managed.eas``).
"""

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from .. import planning
from ..catalog.types import Platform
from . import access, copy_progress, display, expected, outputs as stack_outputs, report as reporting
from .capacity import observe_capacity
from .capacity.window import capacity_line
from .kube import Kube, KubeError
from .managed import eas


class CommandError(Exception):
    """Ends the command with ``code`` and the one-line message."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Request:
    """The command line's arguments."""

    stack: str
    sets: tuple[str, ...] = ()
    kubeconfig: Path | None = None
    context: str | None = None
    pulumi_stack: str | None = None
    fmt: str = "table"
    watch: bool = False
    timeout: float = 3600.0
    print_role: bool = False


def _outputs(req: Request, plan: planning.Plan) -> dict[str, Any]:
    name = req.pulumi_stack or plan.stack_file.stack
    try:
        return stack_outputs.read(name, planning.project_dir())
    except stack_outputs.OutputsError as e:
        raise CommandError(str(e), 2) from None


def _kube_reader(req: Request, plan: planning.Plan, outputs: dict[str, Any] | None) -> Callable[[], Kube]:
    """A function returning a fresh client (exec plugins' tokens expire during a long --watch)."""
    if req.kubeconfig is not None:
        path: Path = req.kubeconfig
        return lambda: Kube.from_kubeconfig(path, req.context)
    assert outputs is not None
    try:
        where = stack_outputs.cluster_access(req.pulumi_stack or plan.stack_file.stack, outputs)
    except stack_outputs.OutputsError as e:
        raise CommandError(str(e), 2) from None
    if where.path is not None:
        file: Path = where.path
        return lambda: Kube.from_kubeconfig(file, req.context or where.context)
    text: str = where.text or ""
    return lambda: Kube.from_kubeconfig_text(text, req.context or where.context, where.source)


def _print(console: Console, report: reporting.Report, fmt: str) -> int:
    display.print_report(console, report, fmt)
    return report.exit_code


def run(req: Request, console: Console) -> int:
    """The exit code: 0 serving, 1 failed, 3 in progress (CommandError: 2 for what cannot be read)."""
    plan = planning.plan(req.stack, req.sets)
    cfg = plan.config
    if cfg.platform == Platform.PAI_EAS:
        if req.print_role:
            raise CommandError(f"stack {plan.stack_file.stack} runs on PAI-EAS: no Kubernetes role to print; status "
                               f"reads EAS with a RAM identity allowed {eas.ACTION} on the service", 2)
        return _pai(req, plan, console)
    try:
        exp = expected.expected(plan)
    except ValueError as e:
        raise CommandError(str(e), 2) from None
    if req.print_role:
        sys.stdout.write(yaml.safe_dump_all(access.roles(exp), sort_keys=False))
        return 0
    outputs = _outputs(req, plan) if req.kubeconfig is None else None
    kube = _kube_reader(req, plan, outputs)
    capacity = observe_capacity(cfg, outputs)
    unreadable: list[copy_progress.CopyProgress] = []  # the first failed read of the bucket, repeated

    def read() -> reporting.Report:
        snap = reporting.observe(kube(), exp)
        if exp.sync_progress and reporting.sync_running(exp, snap):
            progress = unreadable[0] if unreadable else copy_progress.observe(exp.sync_progress)
            if progress.error and not unreadable:
                unreadable.append(progress)
            snap = replace(snap, copy_progress=progress)
        now = datetime.now(timezone.utc)
        rep = reporting.evaluate(exp, snap, now)
        return replace(rep, lines=(capacity_line(capacity, now, cfg.capacity.end_margin_hours), *rep.lines))

    try:
        if req.watch and req.fmt == "table":
            return display.watch(console, read, req.timeout).exit_code
        return _print(console, read(), req.fmt)
    except KubeError as e:
        raise CommandError(str(e), 1) from None


def _pai(req: Request, plan: planning.Plan, console: Console) -> int:
    """PAI-EAS: the capacity (the EAS resource group or Lingjun quota) and the service, from the EAS API."""
    cfg = plan.config
    outputs = _outputs(req, plan) if req.kubeconfig is None else None
    capacity = observe_capacity(cfg, outputs)
    service = eas.service_name(cfg, outputs)
    region = cfg.region or ""

    def read() -> reporting.Report:
        service_state = eas.observe(region, service)
        now = datetime.now(timezone.utc)
        lines = (capacity_line(capacity, now, cfg.capacity.end_margin_hours),
                 *eas.lines(service_state, service, now, cfg.sizing.probe_budget_seconds))
        return reporting.Report(plan.stack_file.stack, "", lines)  # no namespace: EAS runs it

    if req.watch and req.fmt == "table":
        return display.watch(console, read, req.timeout).exit_code
    return _print(console, read(), req.fmt)
