"""A small declarative schema for ``k3infra:*`` keys: types, defaults, allowed values, did-you-mean.

The same schema reads a stack file (typed YAML values) and the Pulumi runtime configuration (every value
a string, objects JSON-encoded), and it is the one place defaults and descriptions live: ``Pulumi.yaml``
declares the same keys and a test keeps the two in step.
"""

import difflib
import json
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping, Sequence

from .problems import Problems, show

NAMESPACE = "k3infra"


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""What ``read_object`` gives a key whose value failed its check (the problem is reported already)."""

K = NAMESPACE + ":"
"""The prefix of every k3infra key, ``k3infra:``."""


def is_given(value: Any) -> bool:
    """Whether a value ``read_object`` returned is set and passed its check (neither None nor MISSING)."""
    return value is not None and value is not MISSING


@dataclass(frozen=True)
class Field:
    """One configuration key."""

    name: str
    """camelCase, as written in the stack file."""
    kind: Any
    """``str``, ``int``, ``float``, ``bool``, an ``Enum`` class, ``list`` (of ``item``), ``dict`` (string keys to
    string values, such as Kubernetes labels) or an ``Obj``."""
    doc: str
    """What the key does, and the default behaviour."""
    default: Any = None
    required: bool = False
    item: Any = str
    """Element kind of a ``list`` field."""
    minimum: float | None = None
    maximum: float | None = None
    pattern: str | None = None
    pattern_doc: str = ""
    secret: bool = False


@dataclass(frozen=True)
class Obj:
    """An object-valued key: a closed set of fields."""

    fields: Sequence[Field]
    doc: str = ""
    by_name: Mapping[str, Field] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {f.name: f for f in self.fields})


def kind_name(kind: Any, item: Any = str) -> str:
    """Human name of a kind, for messages."""
    if isinstance(kind, Obj):
        return "a mapping"
    if isinstance(kind, type) and issubclass(kind, Enum):
        return "one of " + ", ".join(str(m.value) for m in kind)
    if kind is list:
        return f"a list of {kind_name(item)}"
    if kind is dict:
        return "a mapping of strings to strings"
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false"}[kind]


def did_you_mean(name: str, candidates: Sequence[str]) -> str:
    """' (did you mean X?)' when a close candidate exists."""
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    if not close:
        close = [c for c in candidates if c.lower() == name.lower()]
    return f" (did you mean '{close[0]}'?)" if close else ""


def _coerce_scalar(kind: Any, value: Any) -> Any:
    """Turn a Pulumi runtime string into ``kind``; raise ValueError when it is not one."""
    if not isinstance(value, str):
        return value
    if kind is int:
        if re.fullmatch(r"[+-]?\d+", value.strip()):
            return int(value)
        raise ValueError
    if kind is float:
        return float(value)
    if kind is bool:
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ValueError
    if kind in (list, dict) or isinstance(kind, Obj):
        return json.loads(value)
    return value


def read_value(f: Field, value: Any, key: str, problems: Problems, from_strings: bool) -> Any:
    """Validate one value against its field; return the typed value, or MISSING after a problem."""
    kind = f.kind
    if from_strings:
        try:
            value = _coerce_scalar(kind, value)
        except ValueError:
            if isinstance(kind, Obj):
                problems.add(key, "must be a mapping of keys", value, "keys " + ", ".join(kind.by_name))
            else:
                problems.add(key, f"is not {kind_name(kind, f.item)}", value, kind_name(kind, f.item))
            return MISSING
    if isinstance(kind, Obj):
        if not isinstance(value, Mapping):
            problems.add(key, "must be a mapping of keys", value, "keys " + ", ".join(kind.by_name))
            return MISSING
        return read_object(kind, value, key, problems, from_strings)
    if kind is list:
        if not isinstance(value, list):
            problems.add(key, f"must be {kind_name(list, f.item)}", value, kind_name(list, f.item))
            return MISSING
        out = []
        for i, v in enumerate(value):
            item_field = Field(name=f"{f.name}[{i}]", kind=f.item, doc="", pattern=f.pattern, pattern_doc=f.pattern_doc)
            got = read_value(item_field, v, f"{key}[{i}]", problems, from_strings=False)
            if got is not MISSING:
                out.append(got)
        return out
    if kind is dict:
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            problems.add(key, f"must be {kind_name(dict)}", value, kind_name(dict) + " (quote numbers and booleans)")
            return MISSING
        return dict(value)
    if isinstance(kind, type) and issubclass(kind, Enum):
        try:
            return kind(value)
        except ValueError:
            allowed = [str(m.value) for m in kind]
            hint = did_you_mean(str(value), allowed) if isinstance(value, str) else ""
            problems.add(key, f"is not a known value{hint}", value, ", ".join(allowed))
            return MISSING
    # bool is an int in Python: keep the two apart.
    ok = isinstance(value, kind) and not (kind in (int, float) and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok:
        problems.add(key, f"must be {kind_name(kind)}", value, kind_name(kind))
        return MISSING
    if f.minimum is not None and value < f.minimum or f.maximum is not None and value > f.maximum:
        lo = "" if f.minimum is None else f"{f.minimum:g}"
        hi = "" if f.maximum is None else f"{f.maximum:g}"
        rng = f"{lo} to {hi}" if lo and hi else (f"at least {lo}" if lo else f"at most {hi}")
        problems.add(key, "is out of range", value, rng)
        return MISSING
    if f.pattern is not None and not re.fullmatch(f.pattern, str(value)):
        problems.add(key, "is not well formed", value, f.pattern_doc or f"matching {f.pattern}")
        return MISSING
    return value


def read_object(obj: Obj, raw: Mapping[str, Any], prefix: str, problems: Problems, from_strings: bool) -> dict[str, Any]:
    """Read every field of ``obj`` from ``raw``; unknown keys are problems with a did-you-mean."""
    out: dict[str, Any] = {}
    sep = "." if ":" in prefix else ":"
    for name, value in raw.items():
        if name not in obj.by_name:
            key = f"{prefix}{sep}{name}"
            problems.add(key, "is not a known key" + did_you_mean(str(name), list(obj.by_name)), value,
                         "keys " + ", ".join(obj.by_name))
    for f in obj.fields:
        key = f"{prefix}{sep}{f.name}"
        if f.name not in raw or raw[f.name] is None:
            if f.required:
                problems.add(key, "is required", None, kind_name(f.kind, f.item))
                out[f.name] = MISSING
            elif isinstance(f.kind, Obj):
                out[f.name] = read_object(f.kind, {}, key, problems, from_strings)
            else:
                out[f.name] = f.default
            continue
        out[f.name] = read_value(f, raw[f.name], key, problems, from_strings)
    return out


__all__ = ["Field", "Obj", "MISSING", "NAMESPACE", "read_object", "read_value", "did_you_mean", "kind_name", "show"]
