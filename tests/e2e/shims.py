"""Executable shims that start k3infra's Python plugins for the real CLI without the Go language host.

The CLI starts a plugin given as a directory (``PulumiPlugin.yaml``, ``PulumiPolicy.yaml``) through its language
host's ``RunPlugin``, which for Python runs the entry point with the virtualenv's interpreter and the engine's
address as arguments; a plugin given as an executable file it starts directly with the same arguments
(pkg/resource/plugin/plugin.go ``ExecPlugin``; analyzer_plugin.go: "If policyPackPath points at an executable
file ... launch it directly as a binary analyzer plugin"). Each shim does what RunPlugin would, no more.
"""

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _write(path: Path, entry: Path) -> Path:
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -u "{entry}" "$@"\n')
    path.chmod(0o755)
    return path


def component_provider(directory: Path) -> Path:
    """``pulumi-resource-k3infra``: components/__main__.py (component_provider_host)."""
    directory.mkdir(parents=True, exist_ok=True)
    return _write(directory / "pulumi-resource-k3infra", ROOT / "components" / "__main__.py")


def policy_pack(directory: Path) -> Path:
    """The policy pack policies/__main__.py, beside a copy of its PulumiPolicy.yaml (the CLI reads the pack's
    version from it)."""
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "policies" / "PulumiPolicy.yaml", directory / "PulumiPolicy.yaml")
    return _write(directory / "pulumi-analyzer-policy-k3infra", ROOT / "policies" / "__main__.py")
