"""Golden plan files of the AWS stacks: ``tests/golden/<stack>.json`` is ``k3infra plan <stack> --format json``.

A change to what an AWS stack creates shows up as a diff of these files. After an intended change, regenerate
them with ``K3INFRA_UPDATE_GOLDEN=1 pytest tests/aws/test_golden.py`` and review the diff like any other.
"""

import json
import os

import pytest

from tests.support import ROOT, plan

GOLDEN = ROOT / "tests" / "golden"


def rendered(stack: str) -> str:
    """The plan exactly as the CLI prints it with --format json."""
    return json.dumps(plan(stack).to_json(), indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("stack", ["aws-eks", "aws-hyperpod", "aws-eks-pd"])
def test_plan_matches_its_golden_file(stack):
    path = GOLDEN / f"{stack}.json"
    text = rendered(stack)
    if os.environ.get("K3INFRA_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"{path} is missing: run K3INFRA_UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == path.read_text(), f"the {stack} plan changed: review, then regenerate with K3INFRA_UPDATE_GOLDEN=1"


@pytest.mark.parametrize("stack", ["aws-eks", "aws-hyperpod"])
def test_golden_file_is_what_the_cli_prints(stack):
    from typer.testing import CliRunner

    from k3infra import cli

    r = CliRunner().invoke(cli.app, ["plan", stack, "--format", "json"], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    assert r.stdout == (GOLDEN / f"{stack}.json").read_text()
