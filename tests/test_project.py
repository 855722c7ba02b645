"""The project's files agree with each other: Pulumi.yaml, the config schema, the README, CI, the entry point."""

import ast
import re
import subprocess
import tomllib
from pathlib import Path

import yaml

from k3infra.config.keys import ROOT as SCHEMA
from k3infra.config.schema import Obj

from tests.pulumi_project import project_errors, runtime_errors
from tests.support import ROOT, load_script

PULUMI_TYPES = {str: "string", int: "integer", bool: "boolean", list: "array"}


def _pulumi_type(kind) -> str:
    if isinstance(kind, Obj):
        return "object"
    if isinstance(kind, type) and kind not in PULUMI_TYPES:
        return "string"  # enums are strings in the stack file
    return PULUMI_TYPES[kind]


def _plain(default):
    return getattr(default, "value", default)


def test_pulumi_yaml_declares_the_project():
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["name"] == "k3infra"
    assert project["runtime"]["name"] == "python"
    assert project["stackConfigDir"] == "live"


def test_pulumi_yaml_config_matches_the_schema():
    """Every required key and every key with a scalar default is declared with the schema's type, default and
    description; nothing else is declared (Pulumi would demand a value for a declared key without a default)."""
    declared = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    expected = {}
    for f in SCHEMA.fields:
        if f.required:
            expected[f.name] = {"type": _pulumi_type(f.kind), "description": f.doc}
        elif f.default is not None and not isinstance(f.kind, Obj):
            expected[f.name] = {"type": _pulumi_type(f.kind), "default": _plain(f.default), "description": f.doc}
    assert declared == expected


def test_main_only_calls_the_program():
    tree = ast.parse((ROOT / "__main__.py").read_text())
    body = [n for n in tree.body if not isinstance(n, ast.Expr) or not isinstance(n.value, ast.Constant)]
    assert ast.unparse(ast.Module(body=body, type_ignores=[])) == "from k3infra.program import main\nmain()"


def test_pulumi_sdks_are_pinned_exactly():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pulumi = [d for d in deps if d.startswith("pulumi")]
    assert pulumi and all(re.fullmatch(r"pulumi(verse)?(-[a-z-]+)?==\d+\.\d+\.\d+", d) for d in pulumi), pulumi


def test_readme_starts_with_the_two_commands_and_ci_runs_the_second():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)\n```", readme, re.S)
    assert blocks[0] == "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/k3infra plan gcp-a4xmax"
    assert blocks[1] == "./scripts/test"
    assert readme.index(blocks[0]) < readme.index("## ")
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.rstrip().splitlines()[-3:] == ["./scripts/toolchain", "export K3INFRA_REQUIRE_CLUSTER=1", blocks[1]]


def test_the_configuration_page_documents_every_key():
    page = (ROOT / "docs" / "configuration.md").read_text()
    documented = set()
    for first_cell in re.findall(r"^\| ([^|]+) \|", page, re.M):
        documented |= set(re.findall(r"`([a-zA-Z][a-zA-Z0-9]*)`", first_cell))
    assert {f.name for f in SCHEMA.fields} <= documented


def _relative_links(page: Path) -> list[tuple[str, Path, str]]:
    """(link, target file, #anchor) of every relative Markdown link on a page, code blocks left out."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    out = []
    for link in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        out.append((link, (page.parent / path).resolve() if path else page, anchor))
    return out


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", page.read_text(), flags=re.S), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_relative_link_in_the_readme_and_docs_resolves():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = [f"{p.relative_to(ROOT)}: {link}" for p in pages for link, target, anchor in _relative_links(p)
              if not target.exists() or (anchor and target.suffix == ".md" and anchor not in _anchors(target))]
    assert broken == []
    linked = {t for link, t, _ in _relative_links(ROOT / "README.md")}
    assert {p.resolve() for p in (ROOT / "docs").glob("*.md")} <= linked  # every page is reachable


def test_the_readme_is_a_front_page():
    """What a newcomer needs in five minutes; the rest lives in docs/."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) < 10_000
    assert [h for h in re.findall(r"^## (.+)$", readme, re.M)] == [
        "Stacks", "Command line", "Deploying", "Documentation"]


def test_every_vendored_crd_has_one_source_row_and_every_row_a_file():
    """schemas/crds/SOURCES.md is what scripts/refresh-crds downloads from: a file without a row could not
    be refreshed, a row without a file names nothing."""
    refresh = load_script("refresh-crds")
    text = (ROOT / "schemas" / "crds" / "SOURCES.md").read_text()
    rows = [m["file"] for m in map(refresh.ROW.match, text.splitlines()) if m]
    files = sorted(p.name for p in (ROOT / "schemas" / "crds").glob("*.yaml"))
    assert sorted(rows) == files and len(rows) == len(set(rows))
    for name in files:
        crd = yaml.safe_load((ROOT / "schemas" / "crds" / name).read_text())
        assert crd["kind"] == "CustomResourceDefinition" and crd["apiVersion"] == "apiextensions.k8s.io/v1", name


def test_nothing_reads_beside_the_repository():
    """A clone of this repository alone is everything a user has: no sibling folder is read, no seed document at run time."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    sibling = "../" + "shared"
    offenders = [f for f in tracked if (ROOT / f).is_file() and sibling in (ROOT / f).read_text(errors="replace")]
    assert offenders == []


def _tracked(name: str) -> list[Path]:
    listed = subprocess.run(["git", "ls-files", f"*{name}", name], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    return sorted(ROOT / f for f in set(listed))


def test_every_pulumi_project_loads_under_the_clis_rules():
    """The root project and every example load as the CLI loads them (schema, then Project.Validate)."""
    projects = _tracked("Pulumi.yaml")
    assert ROOT / "Pulumi.yaml" in projects and ROOT / "components/examples/gke-kimi-k3/Pulumi.yaml" in projects
    assert {str(p.relative_to(ROOT)): project_errors(p) for p in projects} == {
        str(p.relative_to(ROOT)): [] for p in projects}


def test_every_plugin_and_policy_pack_names_its_runtime():
    files = _tracked("PulumiPlugin.yaml") + _tracked("PulumiPolicy.yaml")
    assert len(files) == 2 and all(runtime_errors(f) == [] for f in files)


def test_the_project_rules_refuse_what_the_cli_refuses(tmp_path):
    """Each rule of project.go fires on a project that breaks it, with the CLI's words."""
    bad = tmp_path / "Pulumi.yaml"
    bad.write_text("name: p\nruntime: yaml\nconfig:\n  gcp:project:\n    type: string\n"
                   "  aws:region:\n    default: us-east-1\n  other:key: {}\n  zones:\n    type: array\n"
                   "  count:\n    type: integer\n    default: two\n  both:\n    default: 1\n    value: 2\n")
    assert project_errors(bad) == [
        "Configuration key 'gcp:project' is not namespaced by the project and should not define a type",
        "Configuration key 'aws:region' is not namespaced by the project and should not define a default value",
        "Configuration key 'other:key' is namespaced and must provide an attribute 'value'",
        "The configuration key 'zones' declares an array but does not specify the underlying type via the "
        "'items' attribute",
        "The default value specified for configuration key 'count' is not of the expected type 'integer'",
        "project config 'both' cannot have both a 'default' and 'value' attribute",
    ]
    bad.write_text("runtime: yaml\nnme: p\n")
    assert project_errors(bad) == ["#/: 'name' is a required property"]
    bad.write_text("name: p\nruntime: {name: python, optons: {}}\n")
    assert any("optons" in e for e in project_errors(bad))


def test_pulumi_installs_the_program_from_requirements_txt():
    """Pulumi's pip toolchain runs `pip install -r requirements.txt` in the project directory and nothing
    else; requirements.txt installs this project, so the pins live once, in pyproject.toml."""
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["runtime"]["options"] == {"toolchain": "pip", "virtualenv": ".venv"}
    lines = [x.strip() for x in (ROOT / "requirements.txt").read_text().splitlines()]
    assert [x for x in lines if x and not x.startswith("#")] == ["-e ."]
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"] == "k3infra"
    components = [x.strip() for x in (ROOT / "components/requirements.txt").read_text().splitlines()]
    assert [x for x in components if x and not x.startswith("#")] == [".."]  # installed from components/


def test_every_virtualenv_the_project_or_pulumi_creates_is_ignored():
    made = [".venv/bin/python", ".checkov-venv/bin/checkov", "components/venv/bin/python",
            "policies/venv/bin/python", ".tools/node_modules/x", "components/examples/gke-kimi-k3/sdks/k3infra/x",
            "k3infra/__pycache__/x.pyc", ".pulumi/stacks/x.json"]
    r = subprocess.run(["git", "check-ignore", "--no-index", *made], cwd=ROOT, capture_output=True, text=True)
    assert r.stdout.split() == made
