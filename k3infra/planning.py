"""Offline planning: find a stack, validate it, run the program under the recording engine, shape the plan.

Shared by ``k3infra plan`` / ``stacks`` / ``render`` and the tests.
"""

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import yaml

from . import offline
from .config import SECRET_KEYS, ConfigError, StackConfig, parse_config
from .catalog.charts import pinned_chart
from .config.problems import Problem
from .offline import Recording, Secret
from .stack_files import StackFile, StackFileError, load_safe_yaml, load_yaml, read_stack_file

PROJECT = "k3infra"


class PlanInputError(Exception):
    """A stack reference or --set that cannot be used at all (exit code 2)."""


def project_dir(start: Path | None = None) -> Path:
    """The k3infra project: the nearest directory upwards with this project's Pulumi.yaml, else the source tree."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        f = d / "Pulumi.yaml"
        if f.is_file() and (load_safe_yaml(f.read_text()) or {}).get("name") == PROJECT:
            return d
    src = Path(__file__).resolve().parent.parent
    if (src / "Pulumi.yaml").is_file():
        return src
    raise PlanInputError("no k3infra Pulumi.yaml found above the current directory")


TEMPLATES = "stacks"
"""The shipped stack templates, ``stacks/Pulumi.<stack>.yaml``: tracked, and never Pulumi's live configuration."""
_STACK_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
"""What a Pulumi stack name may hold (pulumi/sdk/go/common/tokens ``ValidateStackName``: letters, digits, ``-_.``)."""


def stack_names(root: Path) -> list[str]:
    """The templates under ``stacks/``, sorted."""
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (root / TEMPLATES).glob("Pulumi.*.yaml"))


def live_dir(root: Path) -> Path:
    """Where Pulumi keeps the live stacks' configuration: Pulumi.yaml's ``stackConfigDir`` (``live/``, ignored by
    git), so ``pulumi stack init``, ``config set`` and ``stack rm`` write and delete there, never a template."""
    data = load_safe_yaml((root / "Pulumi.yaml").read_text()) or {}
    return root / str(data.get("stackConfigDir") or ".")


def stack_path(ref: str, root: Path) -> Path:
    """A template's name (one of ``stacks/``), else a live stack's name (``live/Pulumi.<ref>.yaml``, made by
    ``k3infra init``), or a path to a stack file."""
    candidate = root / TEMPLATES / f"Pulumi.{ref}.yaml"
    if "/" not in ref and not ref.endswith((".yaml", ".yml")):
        if candidate.is_file():
            return candidate
        live = live_dir(root) / f"Pulumi.{ref}.yaml"
        if live.is_file():
            return live
        raise PlanInputError(f"no stack named {ref!r}; stacks: {', '.join(stack_names(root))} (or give a file path)")
    return Path(ref)


def init_stack(template: str, name: str | None, root: Path, *, force: bool = False) -> Path:
    """Copies template ``template`` to the live configuration of stack ``name`` (default: the template's name),
    ``live/Pulumi.<name>.yaml``, with a first line saying where it came from; refuses to overwrite one unless
    ``force``. The copy is what ``pulumi stack init``, ``config set`` and ``up`` then use and change."""
    source = root / TEMPLATES / f"Pulumi.{template}.yaml"
    if not source.is_file():
        raise PlanInputError(f"no template named {template!r}; templates: {', '.join(stack_names(root))}")
    name = name or template
    if not _STACK_NAME.match(name):
        raise PlanInputError(f"--stack {name!r}: a stack name is letters, digits, '-', '_' and '.'")
    target = live_dir(root) / f"Pulumi.{name}.yaml"
    if target.resolve().parent == source.resolve().parent:
        raise PlanInputError(f"Pulumi.yaml's stackConfigDir is {TEMPLATES}/: the live configuration would overwrite "
                             "the templates")
    if target.exists() and not force:
        raise PlanInputError(f"{target} exists (stack {name!r} is already initialised): edit it, or --force to "
                             f"start again from {source.relative_to(root)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"# Stack {name}, from {source.relative_to(root)} by `k3infra init`. Pulumi's live "
                      f"configuration: `pulumi stack init`, `config set` and `stack rm` change this file, never "
                      f"the template.\n" + source.read_text())
    return target


def parse_set(item: str) -> tuple[str, list[str], Any]:
    """``KEY=VALUE`` → (namespaced key, property path, value parsed as a YAML scalar)."""
    if "=" not in item:
        raise PlanInputError(f"--set {item!r}: expected KEY=VALUE, e.g. k3infra:nodes=3 or nodes=3")
    key, raw = item.split("=", 1)
    key = key.strip()
    if ":" not in key:
        key = f"{PROJECT}:{key}"
    namespace, _, path = key.partition(":")
    head, *rest = path.split(".")
    try:
        value = load_yaml(raw) if raw != "" else ""
    except yaml.YAMLError as e:
        raise PlanInputError(f"--set {item!r}: the value is not a YAML scalar: {e}") from None
    return f"{namespace}:{head}", rest, value


def apply_sets(config: dict[str, Any], sets: Iterable[str]) -> dict[str, Any]:
    """A copy of ``config`` with each ``--set`` applied (``k3infra:capacity.subBlock=x`` sets a nested field)."""
    out = copy.deepcopy(config)
    for item in sets:
        key, path, value = parse_set(item)
        if key in SECRET_KEYS:
            value = Secret(value)
        if not path:
            out[key] = value
            continue
        node = out.setdefault(key, {})
        if not isinstance(node, dict):
            raise PlanInputError(f"--set {item!r}: {key} is not a mapping")
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise PlanInputError(f"--set {item!r}: {part} is not a mapping")
        node[path[-1]] = value
    return out


def load(ref: str, sets: Iterable[str] = (), root: Path | None = None) -> StackFile:
    """Read a stack (name or file) and apply ``--set`` overrides."""
    root = root or project_dir()
    path = stack_path(ref, root)
    sf = read_stack_file(path, root)
    sets = list(sets)
    if not sets:
        return sf
    return StackFile(path=sf.path, stack=sf.stack, project=sf.project, config=apply_sets(sf.config, sets),
                     secret_keys=sf.secret_keys, notes=sf.notes)


def validate(sf: StackFile) -> StackConfig:
    """Validate a stack file's configuration (raises ConfigError with every problem), read as the engine hands it to
    the program: every value a string (``offline.config_strings``). The Pulumi CLI writes top-level scalars back
    quoted (``pulumi config set`` turned ``k3infra:nodes: 2`` into ``"2"``; the first real run found it), and the
    engine passes ``2`` and ``"2"`` alike, so the plan must take both."""
    return parse_config(offline.config_strings(sf.config), stack=sf.stack, project=sf.project,
                        source=f"stack {sf.stack} ({sf.path})", from_strings=True)


def record(sf: StackFile) -> Recording:
    """Run the Pulumi program for ``sf`` under the recording engine (after validating it)."""
    from .program import main  # the program imports pulumi; keep `k3infra stacks` light

    validate(sf)
    return offline.run(main, project=sf.project, stack=sf.stack, config=sf.config,
                       secret_keys=tuple(sorted(set(sf.secret_keys) | (SECRET_KEYS & set(sf.config)))))


CHART_TYPE = "kubernetes:helm.sh/v4:Chart"


@dataclass(frozen=True)
class Plan:
    """One stack's offline plan."""

    stack_file: StackFile
    config: StackConfig
    recording: Recording

    @property
    def warnings(self) -> list[str]:
        """Configuration, deployment and engine warnings, and what the offline reading could not reproduce."""
        exported = self.recording.outputs.get("warnings") or []
        return list(dict.fromkeys([*exported, *self.recording.log_warnings, *self.stack_file.notes]))

    @property
    def charts(self) -> list[str]:
        """Each Helm chart the stack installs: its release, where it comes from and the pinned version, and, for a
        chart taken from the stack's mirror (``k3infra:charts``), the upstream chart it stands for."""
        out: list[str] = []
        for r in self.recording.ordered():
            if r.type != CHART_TYPE:
                continue
            inputs = offline.plain(r.inputs)
            chart, version = str(inputs.get("chart") or ""), str(inputs.get("version") or "")
            repo = (inputs.get("repositoryOpts") or {}).get("repo")
            facts = pinned_chart(chart, version)
            mirror = f" (mirror of {facts.chart}: k3infra:charts)" if facts is not None and facts.chart != chart else ""
            out.append(f"{r.name}: {chart}{f' from {repo}' if repo else ''} {version or '(unversioned)'}{mirror}")
        return out

    def to_json(self) -> dict[str, Any]:
        """The JSON plan (DESIGN.md): stack, project, resources, outputs, sizing, engine, warnings."""
        scaling = self.config.autoscaling
        return {
            "stack": self.stack_file.stack,
            "project": self.stack_file.project,
            "resources": [r.to_json() for r in self.recording.ordered()],
            "outputs": offline.plain(self.recording.outputs),
            "sizing": self.config.sizing.as_dict(),
            # What `k3infra diff` names as an engine change (the sizing has no engine).
            "engine": {"name": str(self.config.engine.name), "version": self.config.engine_version,
                       "image": self.config.image},
            # Only when on: a stack without autoscaling plans as it did before the block existed.
            **({"autoscaling": scaling.as_dict()} if scaling is not None and scaling.enabled else {}),
            # Only when set: a stack that mirrors no chart plans as it did before the key existed.
            **({"chartMirrors": dict(self.config.charts)} if self.config.charts else {}),
            "warnings": self.warnings,
        }


def plan(ref: str, sets: Iterable[str] = (), root: Path | None = None) -> Plan:
    """Validate and record a stack. Raises ConfigError, StackFileError or PlanInputError on bad input."""
    sf = load(ref, sets, root)
    cfg = validate(sf)
    return Plan(stack_file=sf, config=cfg, recording=record(sf))


def problems_of(error: ConfigError) -> list[Problem]:
    """The problems of a ConfigError (for callers that print them their own way)."""
    return list(error.problems)


__all__ = [
    "Plan", "PlanInputError", "StackFileError", "TEMPLATES", "apply_sets", "init_stack", "live_dir", "load",
    "parse_set", "plan", "project_dir", "record", "stack_names", "stack_path", "validate",
]

