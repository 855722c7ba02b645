"""How the Pulumi CLI loads a project file, so a project it would refuse fails here first.

pulumi/pulumi ``sdk/go/common/workspace/loaders.go`` ``LoadProjectBytes`` (v3.259.0): the raw YAML is checked
against ``project.json`` (``ValidateProject``; vendored in schemas/pulumi), the short-hand config values are
rewritten into typed declarations (``RewriteShorthandConfigValues``), and ``Project.Validate`` applies the
config rules below (``project.go``). Policy packs and plugins (``PulumiPolicy.yaml``, ``PulumiPlugin.yaml``)
need a runtime and nothing else (``PolicyPackProject.Validate``, ``PluginProject.Validate``).
"""

import json
from pathlib import Path
from typing import Any

import jsonschema

from tests.support import ROOT

PROJECT_SCHEMA = json.loads((ROOT / "schemas" / "pulumi" / "project.json").read_text())
_TYPES = {"string": str, "integer": int, "boolean": bool, "array": list}


def _namespaced_by_project(project: str, key: str) -> bool:
    """``configKeyIsNamespacedByProject``: no namespace, or the project's own."""
    return ":" not in key or key.startswith(project + ":")


def _shorthand(project: str, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``RewriteShorthandConfigValues``: a bare value is a project key's default or another namespace's value."""
    out = {}
    for key, value in config.items():
        if not isinstance(value, dict):
            value = {"default" if _namespaced_by_project(project, key) else "value": value}
        out[key] = value
    return out


def _matches(type_name: str, value: Any) -> bool:
    """``ValidateConfigValue`` for the scalar types and arrays (booleans are not integers)."""
    kind = _TYPES.get(type_name)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return kind is None or isinstance(value, kind)


def config_errors(project: str, config: dict[str, Any]) -> list[str]:
    """``Project.Validate``'s rules on the config block (the CLI stops at the first; this lists them all)."""
    errors = []
    for key, decl in _shorthand(project, config).items():
        typed = "type" in decl
        if "default" in decl and "value" in decl:
            errors.append(f"project config '{key}' cannot have both a 'default' and 'value' attribute")
        if _namespaced_by_project(project, key):
            if typed and decl["type"] == "array" and "items" not in decl:
                errors.append(f"The configuration key '{key}' declares an array but does not specify the "
                              "underlying type via the 'items' attribute")
            if typed and "default" in decl and not _matches(decl["type"], decl["default"]):
                errors.append(f"The default value specified for configuration key '{key}' is not of the "
                              f"expected type '{decl['type']}'")
        elif typed:
            errors.append(f"Configuration key '{key}' is not namespaced by the project and should not define a type")
        elif "default" in decl:
            errors.append(f"Configuration key '{key}' is not namespaced by the project and should not define a "
                          "default value")
        elif "value" not in decl:
            errors.append(f"Configuration key '{key}' is namespaced and must provide an attribute 'value'")
    return errors


def project_errors(path: Path) -> list[str]:
    """Everything the CLI would refuse in a ``Pulumi.yaml``: schema violations, then the config rules."""
    import yaml

    raw = yaml.safe_load(path.read_text())
    validator = jsonschema.Draft202012Validator(PROJECT_SCHEMA)
    errors = [f"#/{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(raw)]
    if errors:
        return errors
    config = raw.get("config")
    if isinstance(config, str) and "stackConfigDir" in raw:
        return ["Should not use both config and stackConfigDir to define the stack directory."]
    return (config_errors(raw["name"], config) if isinstance(config, dict) else [])


def runtime_errors(path: Path) -> list[str]:
    """``PolicyPackProject.Validate`` / ``PluginProject.Validate``: a runtime with a name."""
    import yaml

    runtime = (yaml.safe_load(path.read_text()) or {}).get("runtime")
    name = runtime.get("name") if isinstance(runtime, dict) else runtime
    return [] if isinstance(name, str) and name else ["project is missing a 'runtime' attribute"]
