"""The k3infra command: stacks, plan in both formats, --set, exit codes, byte-identical JSON."""

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from k3infra import cli, planning
from tests.figures import STACK_FIGURES
from tests.support import ROOT, STACKS, plan as cached_plan

runner = CliRunner()


def run(*args: str):
    return runner.invoke(cli.app, list(args), catch_exceptions=False)


def test_the_stacks_of_design_md_and_the_disaggregated_ones():
    assert STACKS == ["alicloud-ack", "alicloud-pai", "aws-eks", "aws-eks-pd", "aws-hyperpod", "azure-gb300",
                      "azure-gb300-pd", "gcp-a4-sglang", "gcp-a4x-sglang", "gcp-a4xmax", "gcp-a4xmax-pd",
                      "kubernetes-b300", "kubernetes-gb300-nvl72", "kubernetes-gb300-nvl72-pd"]


def test_stacks_lists_each_with_fit_and_cost():
    r = run("stacks", "--format", "json")
    assert r.exit_code == 0, r.output
    rows = {row["stack"]: row for row in json.loads(r.stdout)}
    assert sorted(rows) == STACKS
    assert {s: (row["cloud"], row["accelerator"], row["nodes"], row["fits"]) for s, row in rows.items()} == {
        "alicloud-ack": ("alicloud", "ecs.ebmgn8v.48xlarge", 3, True),
        "alicloud-pai": ("alicloud", "ecs.ebmgn8v.48xlarge", 3, True),
        "aws-eks": ("aws", "p6-b300.48xlarge", 1, True),
        "aws-eks-pd": ("aws", "p6-b300.48xlarge", 3, True),
        "aws-hyperpod": ("aws", "ml.p6-b300.48xlarge", 1, True),
        "azure-gb300": ("azure", "Standard_ND128isr_GB300_v6", 2, True),
        "azure-gb300-pd": ("azure", "Standard_ND128isr_GB300_v6", 6, True),
        "gcp-a4-sglang": ("gcp", "a4-highgpu-8g", 2, True),
        "gcp-a4x-sglang": ("gcp", "a4x-highgpu-4g", 4, True),
        "gcp-a4xmax": ("gcp", "a4x-maxgpu-4g-metal", 2, True),
        "gcp-a4xmax-pd": ("gcp", "a4x-maxgpu-4g-metal", 6, True),
        "kubernetes-b300": ("kubernetes", "hgx-b300", 1, True),
        "kubernetes-gb300-nvl72": ("kubernetes", "gb300-nvl72", 2, True),
        "kubernetes-gb300-nvl72-pd": ("kubernetes", "gb300-nvl72", 6, True),
    }
    assert rows["aws-eks"]["monthlyCostLow"] == 43_070.0 and rows["aws-eks"]["monthlyCostHigh"] == 103_660.0
    # Owned nodes: nothing rented, so no hourly price is made up (catalog.accelerators.OWNED_HARDWARE).
    assert rows["kubernetes-b300"]["monthlyCostHigh"] == 0.0 and rows["kubernetes-b300"]["costEstimate"] is True
    table = run("stacks")
    assert table.exit_code == 0 and all(s in table.stdout for s in STACKS)


@pytest.mark.parametrize("stack", STACKS)
def test_plan_each_stack_in_both_formats(stack, monkeypatch):
    planned = cached_plan(stack)  # both formats print the session's plan of the stack
    monkeypatch.setattr(planning, "plan", lambda ref, sets=(): planned if ref == stack and not sets else None)
    table = run("plan", stack)
    assert table.exit_code == 0, table.output
    assert f"stack {stack}" in table.stdout and "sizing" in table.stdout and "USD" in table.stdout
    r = run("plan", stack, "--format", "json")
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    assert list(plan) == ["stack", "project", "resources", "outputs", "sizing", "engine", "warnings"]
    assert (plan["stack"], plan["project"]) == (stack, "k3infra")
    assert plan["sizing"]["fits"] is True
    assert plan["outputs"]["sizing"] == plan["sizing"]
    for resource in plan["resources"]:
        assert list(resource)[:9] == ["urn", "type", "name", "parent", "dependsOn", "provider", "protect", "custom",
                                      "inputs"]


def test_the_a4x_plan_states_seed_000_s_recommended_layout():
    """Issue 25's acceptance: 4 x a4x-highgpu-4g, TP=16 over MNNVL, SGLang with DSPARK, and the cold start."""
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in run("plan", "gcp-a4x-sglang").stdout.splitlines()
            if line.count("│") == 3 and line.split("│")[1].strip()}
    assert rows["nodes"].startswith("4 x a4x-highgpu-4g per replica x 1 replica(s): 4 x GB200")
    assert rows["layout"] == "TP=16 PP=1 EP=1 over multi-node NVLink (MNNVL)"
    assert rows["engine"] == ("sglang docker.io/lmsysorg/sglang:kimi-k3 (--load-format runai_streamer), speculative "
                              "decoding DSPARK with RadixArk/Kimi-K3-DSpark")
    assert rows["cold start"].startswith("1 h 2 min, the critical path (cluster > GPU pool > image pre-pull > fabric check > load > "
                                         "warm-up; bottleneck: GPU pool)")


def test_two_plans_are_byte_identical_across_processes():
    cmd = [sys.executable, "-m", "k3infra", "plan", "gcp-a4xmax", "--format", "json"]
    first = subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True).stdout
    second = subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True).stdout
    assert first == second and first.startswith(b'{\n  "stack": "gcp-a4xmax"')


def test_set_overrides_typed_values_and_nested_fields():
    r = run("plan", "gcp-a4xmax", "--set", "k3infra:nodes=3", "--set", "capacity.subBlock=sb-2", "--format", "json")
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    assert plan["sizing"]["nodes"] == 3
    assert planning.parse_set("nodes=3") == ("k3infra:nodes", [], 3)
    assert planning.parse_set("k3infra:expertParallel=true") == ("k3infra:expertParallel", [], True)
    assert planning.parse_set("gcp:project=p-1") == ("gcp:project", [], "p-1")
    assert planning.parse_set("weights.bandwidthGbps=12.5") == ("k3infra:weights", ["bandwidthGbps"], 12.5)


def test_configuration_errors_exit_2_with_every_problem_and_no_traceback():
    r = run("plan", "gcp-a4xmax", "--set", "nodes=1", "--set", "loadFormat=MXFP4", "--set", "accelerater=x")
    assert r.exit_code == 2
    assert "Traceback" not in r.output
    lines = r.stderr.splitlines()
    assert lines[0].startswith("Stack gcp-a4xmax (") and lines[0].endswith("has 3 configuration problems:")
    assert [line.split(":")[1].strip() for line in lines[1:]] == ["accelerater", "loadFormat", "nodes"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["plan", "no-such-stack"], "error: no stack named 'no-such-stack'; stacks: alicloud-ack,"),
        (["plan", "gcp-a4xmax", "--set", "nodes"], "error: --set 'nodes': expected KEY=VALUE"),
        (["plan", "/nonexistent/Pulumi.x.yaml"], "error: /nonexistent/Pulumi.x.yaml: no such stack file"),
    ],
)
def test_bad_references_exit_2(args, message):
    r = run(*args)
    assert r.exit_code == 2
    assert r.stderr.startswith(message)


def test_a_stack_file_path_works(tmp_path):
    text = (ROOT / "stacks" / "Pulumi.aws-eks.yaml").read_text()
    f = tmp_path / "Pulumi.mine.yaml"
    f.write_text(text)
    r = run("plan", str(f), "--format", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)["stack"] == "mine"


def test_unexpected_errors_exit_1_without_traceback(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(planning, "plan", boom)
    r = run("plan", "gcp-a4xmax")
    assert r.exit_code == 1
    assert r.stderr.strip() == "error: RuntimeError: disk on fire (set K3INFRA_DEBUG=1 for the traceback)"


@pytest.mark.parametrize("stack", STACKS)
def test_the_plan_draws_the_cold_start_and_says_why_it_exceeds_the_target(stack):
    """Each phase a bar on one axis, the critical path marked with *, the restart beside it; the JSON keeps the
    numbers."""
    f = STACK_FIGURES[stack]
    total, restart, bottleneck, sync_meets_anchor, why = f.total, f.restart, f.bottleneck, f.sync_meets_anchor, f.why
    cs = json.loads(run("plan", stack, "--format", "json").stdout)["sizing"]["coldStart"]
    assert (cs["totalSeconds"], cs["restartSeconds"], cs["bottleneck"]) == (total, restart, bottleneck)
    assert cs["totalSeconds"] == max(p["startSeconds"] + p["seconds"] for p in cs["phases"])
    assert cs["criticalPath"] == [p["name"] for p in cs["phases"] if p["critical"]]
    # the critical phases follow one another without a gap from 0 to the total
    end = 0
    for p in (p for p in cs["phases"] if p["critical"]):
        assert p["startSeconds"] == end, cs["phases"]
        end = p["startSeconds"] + p["seconds"]
    assert end == total
    assert (why is None) == (cs["aboveTarget"] is None) and (why is None or why in cs["aboveTarget"])
    sync = json.loads(run("plan", stack, "--format", "json").stdout)["sizing"]["sync"]
    assert sync_meets_anchor is None if sync is None else (sync["seconds"] <= 906) == sync_meets_anchor
    text = run("plan", stack).stdout
    assert "cold start timeline (* on the critical path)" in text
    for p in cs["phases"]:
        assert ("* " if p["critical"] else "  ") + p["name"] in text
    assert "restart " in text and ("above 10 min" in text) == (restart > 600)
