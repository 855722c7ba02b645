"""The command's lazily loaded SDK packages bind what the SDKs' own ``__init__`` binds (k3infra.sdk_imports)."""

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pulumi
import pytest
from typer.testing import CliRunner

from k3infra import cli, sdk_imports
from k3infra.sdk_imports import SDK_ROOTS, exported, layout
from tests.sdk_identity import identity, star_names
from tests.support import ROOT, STACKS, plan

SITE_PACKAGES = Path(pulumi.__file__).resolve().parent.parent

# For each package named on stdin, every name the eager package binds as the lazy one resolves it, and the names
# its star import binds, taken before any name is resolved: {package: [{name: identity}, [star names]]}.
_RESOLVE = """
import importlib, json, sys
from k3infra import sdk_imports
sdk_imports.install()
from tests.sdk_identity import identity, star_names
packages = json.load(sys.stdin)
stars = {package: star_names(package) for package in packages}  # first: before any name loads its module
out = {package: [{name: identity(getattr(importlib.import_module(package), name)) for name in names}, stars[package]]
       for package, names in packages.items()}
print(json.dumps(out))
"""

#: Packages no stack plans today whose layout is the generated one but not every module's: imported eagerly.
EAGER_DESPITE_THE_HEADER = ["pulumi_kubernetes.helm.v3"]  # helm/v3/helm.py, the hand-written Chart, has no __all__


@pytest.fixture(scope="module")
def checked_packages() -> dict[str, ModuleType]:
    """Every generated SDK service package that planning every stack loads, imported as the SDKs ship, and the
    ones the finder must leave eager."""
    for stack in STACKS:
        plan(stack)
    # "_utilities" in vars: the package's __init__ ran (the SDK's lazy_import leaves every other one unloaded).
    planned = {name: module for name, module in sys.modules.items()
               if name.partition(".")[0] in SDK_ROOTS and "_utilities" in vars(module) and module.__file__
               and Path(module.__file__).name == "__init__.py" and layout(Path(module.__file__)) is not None}
    return dict(sorted((planned | {p: importlib.import_module(p) for p in EAGER_DESPITE_THE_HEADER}).items()))


def test_the_stacks_load_the_packages_of_every_sdk(checked_packages: dict[str, ModuleType]):
    assert {name.partition(".")[0] for name in checked_packages} == SDK_ROOTS
    assert {"pulumi_gcp.compute", "pulumi_kubernetes.core.v1", "pulumi_aws.eks", "pulumi_azure_native.containerservice",
            "pulumi_alicloud.cs"} <= set(checked_packages)


def test_every_name_resolves_to_the_object_the_sdk_binds(checked_packages: dict[str, ModuleType]):
    """Every name of each package, as its ``__init__`` binds it, is the same object lazily, and a star import of
    the package binds the same names."""
    eager = {package: {name: identity(obj) for name, obj in vars(module).items() if not name.startswith("__")}
             for package, module in checked_packages.items()}
    proc = subprocess.run([sys.executable, "-c", _RESOLVE], cwd=ROOT, input=json.dumps({p: sorted(n) for p, n in eager.items()}),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lazy = json.loads(proc.stdout)
    wrong = {package: {name: (eager[package][name], got) for name, got in names.items() if got != eager[package][name]}
             for package, (names, _) in lazy.items()}
    assert {p: w for p, w in wrong.items() if w} == {}
    assert {p: stars for p, (_, stars) in lazy.items()} == {p: star_names(p) for p in checked_packages}
    assert sum(len(names) for names, _ in lazy.values()) > 10_000  # names checked, not a vacuous comparison
    assert sum(o[-1] is True for names, _ in lazy.values() for o in names.values()) > 10_000


def _eager_binding(init: Path, modules: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """What running a generated ``__init__`` leaves bound: each module on its first import, then its names."""
    final: dict[str, tuple[str, str]] = {}
    for module in dict.fromkeys(modules):
        final[module] = ("module", module)
        for name in exported(init.parent / f"{module}.py") or ():
            final[name] = ("name", module)
    return final


def test_every_installed_sdk_package_binds_lazily_what_its_init_binds():
    """Over every package of the installed SDKs (files read, nothing imported): the lazy rule (a name to the last
    module exporting it, else the submodule of that name) gives each name the eager binding."""
    lazy, eager, wrong = [], [], []
    for root in sorted(SDK_ROOTS):
        for init in sorted((SITE_PACKAGES / root).rglob("__init__.py")):
            if init.parent.name == root:
                continue
            name = ".".join(init.parent.relative_to(SITE_PACKAGES).parts)
            found = layout(init)
            (eager if found is None else lazy).append(name)
            if found is not None:
                wrong += [(name, n, want) for n, want in _eager_binding(init, found.modules).items()
                          if (("name", found.where[n]) if n in found.where else ("module", n)) != want]
    assert wrong == []
    assert (len(lazy), len(eager)) == (858, 33)  # at the pinned SDKs (requirements.txt)
    assert set(EAGER_DESPITE_THE_HEADER) <= set(eager) and "pulumi_gcp.compute" in lazy


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


_HEADER = "# coding=utf-8\nimport builtins as _builtins\nfrom .. import _utilities\nimport typing\n"


def _package(tmp_path: Path, init: str, **modules: str) -> Path:
    (tmp_path / "__init__.py").write_text(_HEADER + init)
    for name, text in modules.items():
        (tmp_path / f"{name}.py").write_text(text)
    return tmp_path / "__init__.py"


def test_only_a_generated_package_is_loaded_lazily(tmp_path: Path):
    init = _package(tmp_path, "from .network import *\nfrom ._inputs import *\nfrom . import outputs\n",
                    network="__all__ = ['NetworkArgs',\n    'Network']\n", _inputs="__all__ = [\n    'NetworkArgs',\n]\n")
    found = layout(init)
    assert found is not None and (found.modules, found.utilities_level) == (("network", "_inputs"), 2)
    assert found.where == {"NetworkArgs": "_inputs", "Network": "network"}  # the later star import wins
    assert found.all() == ["Network", "NetworkArgs", "network", "outputs", "typing"]
    assert found.header == {"import builtins as _builtins", "import typing", "from . import outputs"}
    init.write_text(_HEADER + "from .network import *\nif typing.TYPE_CHECKING:\n    import x\n")
    assert layout(init) is None
    init.write_text(_HEADER)
    assert layout(init) is None


def test_a_module_without_names_in_all_leaves_its_package_eager(tmp_path: Path):
    init = _package(tmp_path, "from .release import *\nfrom .helm import *\n", release="__all__ = ['Release']\n",
                    helm="class Chart: ...\n")
    assert exported(tmp_path / "helm.py") is None and layout(init) is None
    (tmp_path / "helm.py").write_text('__all__ = ["Chart"]\n')  # double quotes: not the generated form
    assert layout(init) is None


def test_a_module_imported_after_a_name_like_it_stays_bound_as_the_module(tmp_path: Path):
    init = _package(tmp_path, "from .a import *\nfrom .service import *\n", a="__all__ = ['service', 'A']\n",
                    service="__all__ = ['Service']\n")
    found = layout(init)
    assert found is not None and found.where == {"A": "a", "Service": "service"}
    assert _eager_binding(init, found.modules)["service"] == ("module", "service")
