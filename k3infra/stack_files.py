"""Stack files read the way ``pulumi`` reads them: ``Pulumi.<stack>.yaml`` over the project's declared defaults, YAML
as go-yaml v3 parses it (the 1.2 core schema, no implicit timestamps), ``secure:`` values as placeholder secrets."""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .offline import Secret


class StackFileError(Exception):
    """A stack file that cannot be read at all (missing, not YAML, not a mapping)."""


_YAML12_CORE = {
    "tag:yaml.org,2002:bool": re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    "tag:yaml.org,2002:int": re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
    "tag:yaml.org,2002:float": re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
}
"""The YAML 1.2 core schema's implicit scalars (yaml.org/spec/1.2.2 §10.3.2), which go-yaml v3 follows."""


def _construct_yaml12_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    return int(text[2:], 8) if text.startswith("0o") else int(text, 0) if text.startswith("0x") else int(text, 10)


def _stack_yaml_loader(base: type[yaml.SafeLoader]) -> type[yaml.SafeLoader]:
    """YAML as Pulumi reads stack files: the YAML 1.2 core schema of go-yaml v3, not PyYAML's YAML 1.1.

    An unquoted date stays the string it was written as, and so do ``22:30`` (YAML 1.1: the sexagesimal
    integer 1350), ``yes``/``no``/``on``/``off`` (1.1 booleans) and ``0777`` (a 1.1 octal): a maintenance time
    or a yes/no answer reaches the program as the text the user wrote, as it does under ``pulumi up``.
    """
    loader = type(f"Stack{base.__name__}", (base,), {"yaml_implicit_resolvers": {}})
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items():
        for tag, regexp in resolvers:
            if tag not in ("tag:yaml.org,2002:timestamp", *_YAML12_CORE):
                loader.add_implicit_resolver(tag, regexp, [first])
    for tag, regexp in _YAML12_CORE.items():
        loader.add_implicit_resolver(tag, regexp, list("-+0123456789.tTfF"))
    loader.add_constructor("tag:yaml.org,2002:int", _construct_yaml12_int)
    return loader


_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser where PyYAML has it (its wheels do): the pure-Python parser costs a plan ~10 ms (60-90 million
instructions) for three files of 2 KB."""
_STACK_LOADER = _stack_yaml_loader(_SAFE_LOADER)
_STACK_LOADER_QUOTING = _stack_yaml_loader(yaml.SafeLoader)
"""The pure-Python parser, whose errors quote the line with a caret under the mistake (libyaml's give only the
line and column): a file that does not parse is read again with it, for the message."""


def load_yaml(text: str) -> Any:
    """Parse YAML the way Pulumi parses stack configuration (no implicit timestamps)."""
    try:
        return yaml.load(text, Loader=_STACK_LOADER)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError:
        return yaml.load(text, Loader=_STACK_LOADER_QUOTING)  # noqa: S506 - raises with the quoted line


def load_safe_yaml(text: str) -> Any:
    """``yaml.safe_load`` through libyaml where PyYAML has it (Pulumi.yaml)."""
    return yaml.load(text, Loader=_SAFE_LOADER)  # noqa: S506 - SafeLoader or CSafeLoader


@dataclass(frozen=True)
class StackFile:
    """A ``Pulumi.<stack>.yaml`` merged with the project's declared defaults."""

    path: Path
    stack: str
    project: str
    config: dict[str, Any]
    """``namespace:key`` to typed value; ``secure:`` values are Secret placeholders."""
    secret_keys: tuple[str, ...]
    notes: tuple[str, ...]
    """What the offline reading could not reproduce (ESC environments, encrypted secrets)."""


def read_project(project_dir: Path) -> tuple[str, dict[str, Any]]:
    """The project name and its declared config defaults (``namespace:key`` to value) from Pulumi.yaml."""
    data = load_safe_yaml((project_dir / "Pulumi.yaml").read_text())
    name = data["name"]
    defaults: dict[str, Any] = {}
    for key, decl in (data.get("config") or {}).items():
        full = key if ":" in key else f"{name}:{key}"
        if isinstance(decl, dict):
            if "default" in decl:
                defaults[full] = decl["default"]
            elif "value" in decl:
                defaults[full] = decl["value"]
        else:
            defaults[full] = decl
    return name, defaults


def read_stack_file(path: Path, project_dir: Path) -> StackFile:
    """Read a stack file like ``pulumi`` does: project defaults first, then the stack's values."""
    if not path.is_file():
        raise StackFileError(f"{path}: no such stack file")
    try:
        data = load_yaml(path.read_text())
    except yaml.YAMLError as e:
        raise StackFileError(f"{path}: not valid YAML: {e}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise StackFileError(f"{path}: a stack file is a YAML mapping with a config: key, not a {type(data).__name__}")
    raw_config = data.get("config") or {}
    if not isinstance(raw_config, dict):
        raise StackFileError(f"{path}: config: must be a mapping of namespace:key to value")
    project, defaults = read_project(project_dir)
    name = path.name
    stack = name[len("Pulumi."):-len(".yaml")] if name.startswith("Pulumi.") and name.endswith(".yaml") else path.stem
    config: dict[str, Any] = dict(defaults)
    secret_keys: list[str] = []
    notes: list[str] = []
    for key, value in raw_config.items():
        key = str(key)
        if ":" not in key:
            raise StackFileError(f"{path}: configuration key {key!r} must be namespaced, e.g. {project}:{key}")
        if isinstance(value, dict) and set(value) == {"secure"}:
            secret_keys.append(key)
            config[key] = Secret(f"offline-placeholder-for-{key}")
            notes.append(f"{key} is encrypted in the stack file; the offline plan uses a placeholder secret")
            continue
        config[key] = value
    if data.get("environment"):
        notes.append("the stack imports Pulumi ESC environments, which the offline plan does not resolve")
    return StackFile(path=path, stack=stack, project=project, config=config, secret_keys=tuple(secret_keys),
                     notes=tuple(notes))
