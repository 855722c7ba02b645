"""Printing a report: a Rich table (each phase with a bar of its time against its budget), stable JSON, and the
``--watch`` live display."""

import json
import time
from collections.abc import Callable

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from .lines import FAILED, OK, PROGRESS, UNKNOWN, WARN, Report

STYLES = {OK: "green", PROGRESS: "yellow", FAILED: "red", WARN: "magenta", UNKNOWN: "dim"}


def duration(seconds: int | None) -> str:
    if seconds is None:
        return ""
    h, rem = divmod(int(seconds), 3600)
    m, s = divmod(rem, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {s:02d} s" if m else f"{s} s"


def to_json(report: Report) -> str:
    """Sorted keys, no timestamps: only the stated fields (phaseSeconds, budgetSeconds) change with time."""
    return json.dumps(report.to_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def table(report: Report) -> Group:
    where = f" (namespace {escape(report.namespace)})" if report.namespace else ""
    t = Table(title=f"k3infra status {escape(report.stack)}{where}", title_justify="left")
    for col in ("", "what", "state", "phase", "detail", "time / budget", ""):
        t.add_column(col, overflow="fold")
    last = ""
    for line in report.lines:
        style = STYLES[line.state]
        time_text = duration(line.phase_seconds) + (f" / {duration(line.budget_seconds)}"
                                                    if line.budget_seconds else "")
        bar = (ProgressBar(total=line.budget_seconds, completed=min(line.phase_seconds, line.budget_seconds),
                           width=12, complete_style=style, finished_style="red")
               if line.budget_seconds and line.phase_seconds is not None and line.state in (PROGRESS, FAILED)
               else "")
        t.add_row(line.section if line.section != last else "", escape(line.name),
                  Text(line.state, style=style), escape(line.phase), escape(line.detail), time_text, bar)
        last = line.section
    verdict = Text(f"{report.state}: {report.summary}", style=STYLES[report.state])
    return Group(t, verdict)


def print_report(console: Console, report: Report, fmt: str) -> None:
    if fmt == "json":
        console.file.write(to_json(report))
    else:
        console.print(table(report))


def watch(console: Console, read: Callable[[], Report], timeout: float, interval: float = 2.0) -> Report:
    """Refreshes the table until the stack serves or fails, or ``timeout`` seconds pass (the last report stands:
    still in progress, exit 3)."""
    deadline = time.monotonic() + timeout
    report = read()
    with Live(table(report), console=console, refresh_per_second=4, transient=False) as live:
        while report.state == PROGRESS and time.monotonic() < deadline:
            time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
            report = read()
            live.update(table(report))
    return report
