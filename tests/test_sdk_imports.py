"""The command's lazily loaded SDK packages bind what the SDKs' own ``__init__`` binds (k3infra.sdk_imports)."""

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from k3infra import cli, sdk_imports
from k3infra.sdk_imports import SDK_ROOTS, exported, star_imports
from tests.support import ROOT, STACKS, plan

# Prints, for each package named on the command line, every name the eager package binds as the lazy one
# resolves it: {package: {name: identity}}.
_RESOLVE = """
import json, sys, types
from k3infra import sdk_imports
sdk_imports.install()
import importlib
def identity(obj):
    if isinstance(obj, types.ModuleType):
        return ["module", obj.__name__]
    return [type(obj).__name__, getattr(obj, "__module__", None), getattr(obj, "__qualname__", repr(obj))]
names = json.load(sys.stdin)
out = {}
for package, bound in names.items():
    module = importlib.import_module(package)
    out[package] = {name: identity(getattr(module, name)) for name in bound}
print(json.dumps(out))
"""


def _identity(obj: object) -> list[object]:
    if isinstance(obj, ModuleType):
        return ["module", obj.__name__]
    return [type(obj).__name__, getattr(obj, "__module__", None), getattr(obj, "__qualname__", repr(obj))]


@pytest.fixture(scope="module")
def planned_packages() -> dict[str, ModuleType]:
    """Every generated SDK service package that planning every stack loads, imported as the SDKs ship."""
    for stack in STACKS:
        plan(stack)
    return {name: module for name, module in sorted(sys.modules.items())
            if name.partition(".")[0] in SDK_ROOTS and getattr(module, "__path__", None) and module.__file__
            and star_imports(Path(module.__file__)) is not None}


def test_the_stacks_load_the_packages_of_every_sdk(planned_packages: dict[str, ModuleType]):
    roots = {name.partition(".")[0] for name in planned_packages}
    assert roots == SDK_ROOTS
    assert {"pulumi_gcp.compute", "pulumi_kubernetes.core.v1", "pulumi_aws.eks", "pulumi_azure_native.containerservice",
            "pulumi_alicloud.cs"} <= set(planned_packages)


def test_every_name_resolves_to_the_object_the_sdk_binds(planned_packages: dict[str, ModuleType]):
    """Every public and private name of each package, as its ``__init__`` binds it, is the same object lazily."""
    eager = {package: {name: _identity(obj) for name, obj in vars(module).items() if not name.startswith("__")}
             for package, module in planned_packages.items()}
    proc = subprocess.run([sys.executable, "-c", _RESOLVE], cwd=ROOT, input=json.dumps({p: sorted(n) for p, n in eager.items()}),
                          capture_output=True, text=True, check=True)
    lazy = json.loads(proc.stdout)
    wrong = {package: {name: (eager[package][name], got) for name, got in names.items() if got != eager[package][name]}
             for package, names in lazy.items()}
    assert {p: w for p, w in wrong.items() if w} == {}
    assert sum(map(len, lazy.values())) > 10_000  # names checked, not a vacuous comparison


@pytest.mark.parametrize("stack", ["gcp-a4xmax", "aws-hyperpod", "azure-gb300", "alicloud-ack", "kubernetes-gb300-nvl72"])
def test_the_command_plans_what_the_program_plans(stack: str):
    """``python -m k3infra`` (lazy packages) prints the plan the in-process command (eager packages) prints."""
    command = subprocess.run([sys.executable, "-m", "k3infra", "plan", stack, "--format", "json"], cwd=ROOT,
                             capture_output=True, check=True).stdout.decode()
    in_process = CliRunner().invoke(cli.app, ["plan", stack, "--format", "json"], catch_exceptions=False)
    assert in_process.exit_code == 0
    assert command == in_process.stdout


def test_the_command_installs_before_any_sdk_package_is_imported():
    """cli.main installs the finder first thing; importing the command line must not import an SDK package."""
    code = ("import sys; import k3infra.cli; "
            f"print(sorted(m for m in sys.modules if '.' in m and m.partition('.')[0] in {sorted(SDK_ROOTS)!r}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert not sdk_imports.installed()  # this test process imports the SDKs as they ship


def test_only_a_generated_init_is_loaded_lazily(tmp_path: Path):
    init = tmp_path / "__init__.py"
    header = "# coding=utf-8\nimport builtins as _builtins\nfrom .. import _utilities\nimport typing\n"
    init.write_text(header + "from .network import *\nfrom ._inputs import *\nfrom . import outputs\n")
    assert star_imports(init) == (["network", "_inputs"], 2)
    init.write_text(header + "from .network import *\nif typing.TYPE_CHECKING:\n    import x\n")
    assert star_imports(init) is None
    init.write_text(header)
    assert star_imports(init) is None


def test_a_module_without_all_is_refused(tmp_path: Path):
    module = tmp_path / "network.py"
    module.write_text("__all__ = ['NetworkArgs',\n    'Network']\n")
    assert exported(module) == ["NetworkArgs", "Network"]
    module.write_text("class Network: ...\n")
    with pytest.raises(ImportError, match="no __all__"):
        exported(module)
