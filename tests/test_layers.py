"""The layers of k3infra hold (docs/architecture.md): the import-linter contracts in pyproject.toml pass, an import
against any of them breaks it, and no module imports itself back through others.

Every plant runs ``lint-imports`` on a copy of the package with one import added, so a contract that could not fail
(a misspelt layer, a contract import-linter skips) shows here as a plant that passes.
"""

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support import ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
NAMES = {c["id"]: c["name"] for c in CONTRACTS}


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the package under ``root`` with ``root``'s pyproject.toml (no cache written)."""
    if not LINT_IMPORTS.exists():
        pytest.fail("import-linter is not installed: pip install -e '.[test]'")
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(root)})


def copy_with(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of k3infra and pyproject.toml in ``tmp_path`` with ``line`` added at the end of ``module`` (a path
    under k3infra/; created if it does not exist)."""
    shutil.copytree(ROOT / "k3infra", tmp_path / "k3infra", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "k3infra" / module
    target.write_text((target.read_text() if target.exists() else '"""Planted."""\n') + f"\n{line}  # planted\n")
    return tmp_path


def test_docs_architecture_lists_the_layers_of_the_contract() -> None:
    """docs/architecture.md shows the layers contract's rows, so the page and the check cannot drift apart."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    block = page.split("<!-- layers: the rows of pyproject.toml's layers contract")[1].split("<!-- layers: end -->")[0]
    rows = [line for line in block.splitlines()[1:] if line and not line.startswith("```")]
    layers = next(c for c in CONTRACTS if c["id"] == "layers")
    assert rows == layers["layers"]


def test_the_contracts_hold() -> None:
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    for name in NAMES.values():
        assert f"{name} KEPT" in result.stdout
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in result.stdout


PLANTS = [
    # The issue's own case: serving reaching up into what composes it.
    ("serving/autoscaling.py", "from ..observability import rules", "layers",
     "k3infra.serving is not allowed to import k3infra.observability"),
    ("serving/pods.py", "from ..status import access", "layers",
     "k3infra.serving is not allowed to import k3infra.status"),
    ("serving/engine/vllm.py", "from ...gcp import node_pool", "layers",
     "k3infra.serving is not allowed to import k3infra.gcp"),
    ("observability/rules.py", "from ..aws import monitoring", "layers",
     "k3infra.observability is not allowed to import k3infra.aws"),
    # Clouds are independent of each other.
    ("kubernetes/deployment.py", "from ..azure import cluster", "layers",
     "k3infra.kubernetes is not allowed to import k3infra.azure"),
    # The catalog imports nothing of k3infra; sizing stays pure of the configuration.
    ("catalog/models.py", "from .. import names", "layers", "k3infra.catalog is not allowed to import k3infra.names"),
    ("sizing/memory.py", "from ..config import StackConfig", "layers",
     "k3infra.sizing is not allowed to import k3infra.config"),
    # A function-local import counts like any other.
    ("config/naming.py", "def _planted() -> None:\n    from ..serving import pods", "layers",
     "k3infra.config is not allowed to import k3infra.serving"),
    # A new module has to be given its layer.
    ("gateways.py", "from .catalog import KIMI_K3", "layers", "The following modules are not listed as layers"),
    ("weightcopy/copier/hub.py", "from ...catalog import KIMI_K3", "in-cluster",
     "k3infra.weightcopy.copier.hub -> k3infra.catalog"),
    ("status/managed/hyperpod.py", "from .. import report", "acyclic", "No cycles are allowed in k3infra.status"),
]


@pytest.mark.parametrize(("module", "line", "contract", "says"), PLANTS, ids=[p[0] for p in PLANTS])
def test_a_planted_import_breaks_its_contract(tmp_path: Path, module: str, line: str, contract: str,
                                              says: str) -> None:
    result = lint(copy_with(tmp_path, module, line))
    assert result.returncode == 1, result.stdout[-4000:] + result.stderr[-2000:]
    assert f"{NAMES[contract]} BROKEN" in result.stdout
    assert says in result.stdout, result.stdout[-4000:]


def import_graph(root: Path) -> dict[str, list[str]]:
    """Every module of k3infra under ``root`` and the k3infra modules it imports (grimp: the graph import-linter
    checks, function-local and TYPE_CHECKING imports included)."""
    code = ("import grimp, json; g = grimp.build_graph('k3infra', cache_dir=None); "
            "print(json.dumps({m: sorted(g.find_modules_directly_imported_by(m)) for m in g.modules}))")
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(root)}, check=True)
    return json.loads(result.stdout)


def cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_module_imports_itself_back() -> None:
    graph = import_graph(ROOT)
    assert len(graph) > 150 and "k3infra.serving.stack" in graph["k3infra.aws.deployment"]
    assert cycles(graph) == []


def test_a_package_importing_its_own_module_back_is_a_cycle(tmp_path: Path) -> None:
    """A package's __init__ and one of its modules importing each other: not siblings, so acyclic_siblings keeps its
    contract; the module graph has the cycle."""
    root = copy_with(tmp_path, "offline_state/aws.py", "from . import FAKE_SUBSCRIPTION")
    assert lint(root).returncode == 0
    assert cycles(import_graph(root)) == [["k3infra.offline_state", "k3infra.offline_state.aws"]]
