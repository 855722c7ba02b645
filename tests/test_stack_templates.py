"""The shipped templates (stacks/) stay templates: Pulumi's live configuration is elsewhere (Pulumi.yaml's
stackConfigDir, live/, ignored by git), ``k3infra init`` copies a template there, and every template still plans by
its name. tests/e2e/test_stack_templates.py runs the real CLI's stack init, config set and stack rm against it."""

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from k3infra import cli, planning
from tests.support import ROOT, STACKS


def _project(tmp_path: Path, *templates: str) -> Path:
    """A copy of the project's Pulumi.yaml and some templates (init writes into the project it finds)."""
    (tmp_path / "stacks").mkdir()
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    for t in templates:
        shutil.copy(ROOT / "stacks" / f"Pulumi.{t}.yaml", tmp_path / "stacks" / f"Pulumi.{t}.yaml")
    return tmp_path


def test_the_live_configuration_is_an_ignored_directory_apart_from_the_templates() -> None:
    assert yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["stackConfigDir"] == "live"
    assert planning.live_dir(ROOT) == ROOT / "live"
    live = ["live/Pulumi.kubernetes-b300.yaml", "live/Pulumi.try.yaml"]
    templates = [f"stacks/Pulumi.{s}.yaml" for s in STACKS]
    r = subprocess.run(["git", "check-ignore", "--no-index", *live, *templates, "live/.gitignore"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.stdout.split() == live  # what Pulumi writes is ignored; the templates and the directory's rule are not


def test_every_template_plans_by_its_name_from_stacks() -> None:
    for stack in STACKS:
        assert planning.stack_path(stack, ROOT) == ROOT / "stacks" / f"Pulumi.{stack}.yaml"
        assert planning.plan(stack, root=ROOT).stack_file.stack == stack


def test_init_copies_a_template_into_the_live_directory_and_the_copy_plans_as_the_template(tmp_path: Path) -> None:
    root = _project(tmp_path, "aws-eks")
    template = (root / "stacks" / "Pulumi.aws-eks.yaml").read_text()
    path = planning.init_stack("aws-eks", None, root)
    assert path == root / "live" / "Pulumi.aws-eks.yaml"
    assert path.read_text() == ("# Stack aws-eks, from stacks/Pulumi.aws-eks.yaml by `k3infra init`. Pulumi's live "
                                "configuration: `pulumi stack init`, `config set` and `stack rm` change this file, "
                                "never the template.\n" + template)
    assert (root / "stacks" / "Pulumi.aws-eks.yaml").read_text() == template
    assert planning.plan(str(path), root=root).to_json() == planning.plan("aws-eks", root=root).to_json()
    # another name: the stack is found by it (no template has it), and plans as itself
    other = planning.init_stack("aws-eks", "try", root)
    assert planning.stack_path("try", root) == other == root / "live" / "Pulumi.try.yaml"
    assert planning.plan("try", root=root).stack_file.stack == "try"


def test_init_refuses_to_overwrite_an_unknown_template_or_a_bad_name(tmp_path: Path) -> None:
    root = _project(tmp_path, "aws-eks")
    planning.init_stack("aws-eks", "mine", root)
    (root / "live" / "Pulumi.mine.yaml").write_text("config: {}\n")
    with pytest.raises(planning.PlanInputError) as e:
        planning.init_stack("aws-eks", "mine", root)
    assert str(e.value) == (f"{root}/live/Pulumi.mine.yaml exists (stack 'mine' is already initialised): edit it, "
                            "or --force to start again from stacks/Pulumi.aws-eks.yaml")
    assert planning.init_stack("aws-eks", "mine", root, force=True).read_text().endswith(
        (root / "stacks" / "Pulumi.aws-eks.yaml").read_text())
    with pytest.raises(planning.PlanInputError, match="^no template named 'aws-ek'; templates: aws-eks$"):
        planning.init_stack("aws-ek", None, root)
    with pytest.raises(planning.PlanInputError, match="a stack name is letters, digits"):
        planning.init_stack("aws-eks", "my stack", root)


def test_init_refuses_a_project_whose_live_directory_is_the_templates(tmp_path: Path) -> None:
    root = _project(tmp_path, "aws-eks")
    text = (root / "Pulumi.yaml").read_text().replace("stackConfigDir: live", "stackConfigDir: stacks")
    (root / "Pulumi.yaml").write_text(text)
    with pytest.raises(planning.PlanInputError, match="would overwrite the templates"):
        planning.init_stack("aws-eks", "x", root)


def test_the_init_command_prints_the_next_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path, "kubernetes-b300")
    monkeypatch.chdir(root)
    r = CliRunner().invoke(cli.app, ["init", "kubernetes-b300", "--stack", "try"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == [
        "wrote live/Pulumi.try.yaml from stacks/Pulumi.kubernetes-b300.yaml; next:",
        "  edit live/Pulumi.try.yaml (the kubeconfig, the bucket, the image...)",
        "  k3infra plan try",
        "  pulumi stack init try",
        "  pulumi config set --secret k3infra:hfToken ... -s try   (and the stack's other secrets)",
        "  pulumi up -s try"]
    again = CliRunner().invoke(cli.app, ["init", "kubernetes-b300", "--stack", "try"], catch_exceptions=False)
    assert again.exit_code == 2 and "exists (stack 'try' is already initialised)" in again.output
