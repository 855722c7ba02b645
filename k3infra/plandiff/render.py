"""A diff as text (the terminal) and as Markdown (a pull-request comment, within GitHub's size limit)."""

import difflib
import json
from typing import Any

from ..offline import SECRET_MASK
from .changes import MISSING, Change, Kind, PlanDiff, ResourceDiff
from .shape import shape_lines


SYMBOL = {Kind.ADD: "+", Kind.REMOVE: "-", Kind.REPLACE: "+-", Kind.CHANGE: "~"}
"""Pulumi's preview symbols."""


def _value(v: Any, masked: bool, width: int = 160) -> str:
    if v is MISSING:
        return "(absent)"
    if masked:
        return SECRET_MASK
    s = json.dumps(v, ensure_ascii=False, sort_keys=True)
    return s if len(s) <= width else s[: width - 1] + "…"


def _words(v: Any) -> list[str] | None:
    """A long string (or list of strings: a command line, a script) as words, for a word-level diff."""
    if isinstance(v, str):
        return v.split()
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return [w for x in v for w in x.split()]
    return None


def word_diff(old: Any, new: Any, context: int = 3, width: int = 300) -> str | None:
    """``…size [-8-]{+4+} --pipeline…``: the words that changed between two long strings (or string lists),
    with a few words of context; None when the values are short or not text."""
    a, b = _words(old), _words(new)
    if a is None or b is None or len(json.dumps(old)) + len(json.dumps(new)) <= 160:
        return None
    parts: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        before = " ".join(a[max(0, i1 - context):i1])
        after = " ".join(a[i2:i2 + context])
        removed = f"[-{' '.join(a[i1:i2])}-]" if i2 > i1 else ""
        added = f"{{+{' '.join(b[j1:j2])}+}}" if j2 > j1 else ""
        parts.append("…" + " ".join(x for x in (before, removed + added, after) if x) + "…")
    text = " | ".join(parts) or "(whitespace only)"
    return text if len(text) <= width else text[: width - 1] + "…"


def _change_line(c: Change) -> str:
    flag = " [forces replacement]" if c.forces_replacement else ""
    if c.masked:
        if c.old is MISSING or c.new is MISSING:
            return f"{c.path}: {_value(c.old, True)} → {_value(c.new, True)}{flag}"
        return f"{c.path}: {SECRET_MASK} (changed; value hidden){flag}"
    words = word_diff(c.old, c.new)
    if words is not None:
        return f"{c.path}: {words}{flag}"
    return f"{c.path}: {_value(c.old, False)} → {_value(c.new, False)}{flag}"


def _title(d: PlanDiff) -> str:
    stacks = d.head_stack if d.base_stack == d.head_stack else f"{d.base_stack} → {d.head_stack}"
    return f"k3infra diff: {stacks}"


def render_text(d: PlanDiff, max_added_lines: int = 40) -> str:
    """The diff for a terminal or a log."""
    lines = [_title(d)]
    if d.empty:
        lines.append(f"No changes: the two plans register the same resources with the same inputs, "
                     f"outputs and warnings ({d.unchanged} resources).")
        return "\n".join(lines) + "\n"
    if d.deployment:
        lines += ["deployment:"] + [f"  ~ {line}" for line in shape_lines(d.deployment)] + [""]
    lines.append(f"resources: {d.summary()}")
    for r in d.resources:
        lines.append("")
        head = f"{SYMBOL[r.kind]} {r.type} {r.name}"
        if r.kind == Kind.REPLACE:
            head += f"  (replace: {r.reason})"
        elif r.reason:
            head += f"  ({r.reason})"
        lines.append(head)
        shown = list(r.changes)
        if r.kind == Kind.ADD:
            for c in shown[:max_added_lines]:
                lines.append(f"    {c.path}: {_value(c.new, c.masked)}")
            if len(shown) > max_added_lines:
                lines.append(f"    … and {len(shown) - max_added_lines} more properties")
        else:
            lines += [f"    {_change_line(c)}" for c in shown]
    if d.outputs:
        lines += ["", "outputs:"] + [f"  ~ {_change_line(c)}" for c in d.outputs]
    if d.warnings_added or d.warnings_removed:
        lines += ["", "warnings:"] + [f"  + {w}" for w in d.warnings_added] + [f"  - {w}" for w in d.warnings_removed]
    return "\n".join(lines) + "\n"


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _md_code(s: str) -> str:
    s = _md(s)
    return f"`` {s} ``" if "`" in s else f"`{s}`"


def render_markdown(d: PlanDiff, max_added_lines: int = 40, max_chars: int | None = None) -> str:
    """The diff as GitHub-flavoured Markdown (one section per stack in a PR comment).

    Order: the deployment's layout, mode, node count and engine changes, the summary, the resource table, the property changes of replaced and changed resources, the
    warnings, the outputs, the properties of created resources. With ``max_chars`` (a PR comment holds 65,536
    characters) the summary always appears, the resource table too (or, when it alone would take half the
    budget, a count per kind and type), the rest while it fits, and a note names what was left out."""
    head = [f"### {_md(_title(d))}", ""]
    if d.empty:
        head.append(f"No changes ({d.unchanged} resources, same inputs, outputs and warnings).")
        return "\n".join(head) + "\n"
    if d.deployment:
        head += ["**Deployment**", ""] + [f"- {_md(c.path)}: {_md_code(str(c.old))} → {_md_code(str(c.new))}"
                                          for c in d.deployment] + [""]
    head += [f"**{d.summary()}**", ""]
    table: list[str] = []
    if d.resources:
        table += ["| | resource | what |", "| --- | --- | --- |"]
        for r in d.resources:
            what = {Kind.ADD: "create", Kind.REMOVE: "delete", Kind.CHANGE: "update in place",
                    Kind.REPLACE: f"replace: {r.reason}"}[r.kind]
            if r.kind == Kind.CHANGE and r.reason:
                what += f" ({r.reason})"
            table.append(f"| `{SYMBOL[r.kind]}` | {_md_code(r.type)} **{_md(r.name)}** | {_md(what)} |")
        table.append("")
    if max_chars is not None and len("\n".join(head + table)) > max_chars // 2:
        # too many resources for a comment: count them by kind and type instead
        counts: dict[tuple[Kind, str], int] = {}
        for r in d.resources:
            counts[(r.kind, r.type)] = counts.get((r.kind, r.type), 0) + 1
        table = [f"- `{SYMBOL[k]}` {n} x {_md_code(t)}" for (k, t), n in counts.items()] + [""]
    tail: list[str] = []
    if d.outputs:
        tail += ["**Outputs**", "", "| output | old | new |", "| --- | --- | --- |"]
        for c in d.outputs:
            tail.append(f"| {_md_code(c.path)} | {_md_code(_value(c.old, c.masked))} | {_md_code(_value(c.new, c.masked))} |")
        tail.append("")
    warnings: list[str] = []
    if d.warnings_added or d.warnings_removed:
        warnings += ["**Warnings**", ""] + [f"- added: {_md(w)}" for w in d.warnings_added] + \
            [f"- removed: {_md(w)}" for w in d.warnings_removed]
        warnings.append("")

    # what a reviewer reads first, and keeps when the budget is short: what changes in existing resources, the
    # warnings, the outputs, then the properties of what is created
    changed = [(_details(r, max_added_lines), "detail") for r in d.resources
               if r.changes and r.kind in (Kind.REPLACE, Kind.CHANGE)]
    created = [(_details(r, max_added_lines), "detail") for r in d.resources
               if r.changes and r.kind not in (Kind.REPLACE, Kind.CHANGE)]
    blocks = changed + ([("\n".join(warnings) + "\n", "the warnings")] if warnings else []) + \
        ([("\n".join(tail) + "\n", f"{len(d.outputs)} output change(s)")] if tail else []) + created
    head += table
    budget = None if max_chars is None else max_chars - len("\n".join(head)) - 300
    body: list[str] = []
    left_out: list[str] = []
    for block, what in blocks:
        if budget is not None and len(block) > budget:
            left_out.append(what)
            continue
        body.append(block)
        if budget is not None:
            budget -= len(block)
    if left_out:
        n = left_out.count("detail")
        named = [w for w in left_out if w != "detail"] + ([f"{n} resource detail(s)"] if n else [])
        body.append(f"_Left out to keep the comment short: {', '.join(named)}; the job's artifact has the full "
                    "diff._\n")
    return "\n".join(head) + "\n" + "\n".join(body) + "\n"


def _details(r: ResourceDiff, max_added_lines: int) -> str:
    rows = list(r.changes)
    out = [f"<details><summary><code>{SYMBOL[r.kind]}</code> {_md(r.type)} <b>{_md(r.name)}</b> "
           f"({len(rows)} propert{'y' if len(rows) == 1 else 'ies'})</summary>", ""]
    if r.kind == Kind.ADD:
        rows = [c for c in rows if not c.path.startswith("(options)")]
        out += ["| property | value |", "| --- | --- |"]
        out += [f"| {_md_code(c.path)} | {_md_code(_value(c.new, c.masked))} |" for c in rows[:max_added_lines]]
        if len(rows) > max_added_lines:
            out.append(f"| … | and {len(rows) - max_added_lines} more |")
    else:
        out += ["| property | old | new |", "| --- | --- | --- |"]
        for c in rows:
            old, new = _value(c.old, c.masked), _value(c.new, c.masked)
            if c.masked and MISSING not in (c.old, c.new):
                new = f"{SECRET_MASK} (changed)"
            flag = " **forces replacement**" if c.forces_replacement else ""
            words = None if c.masked else word_diff(c.old, c.new)
            if words is not None:
                out.append(f"| {_md_code(c.path)}{flag} | changed words: | {_md_code(words)} |")
            else:
                out.append(f"| {_md_code(c.path)}{flag} | {_md_code(old)} | {_md_code(new)} |")
    out += ["", "</details>", ""]
    return "\n".join(out) + "\n"
