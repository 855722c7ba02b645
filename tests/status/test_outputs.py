"""``k3infra status STACK`` without --kubeconfig: the stack's outputs through the Pulumi CLI (a fake ``pulumi`` on
PATH printing recorded JSON, no cloud), the kubeconfig output used to read the cluster (a stand-in API on
loopback), and every way the outputs can be missing ending in one line and exit 2."""

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from k3infra import cli, planning
from k3infra.status import outputs
from tests.support import plan

from .fake_api import fake_api, kubeconfig

EKS_NODES = "/api/v1/nodes"


def fake_pulumi(bin_dir: Path, stdout: str, code: int = 0, stderr: str = "") -> Path:
    """A ``pulumi`` that records its arguments and working directory, then prints ``stdout``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "out.json").write_text(stdout)
    (bin_dir / "err.txt").write_text(stderr)
    script = bin_dir / "pulumi"
    script.write_text(f"#!/bin/sh\necho \"$PWD $*\" > {bin_dir}/argv\ncat {bin_dir}/out.json\n"
                      f"cat {bin_dir}/err.txt >&2\nexit {code}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bin_dir


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS credentials evident: the capacity line comes from the outputs alone."""
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))


def run(monkeypatch: pytest.MonkeyPatch, bin_dir: Path | None, *args: str):
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin" if bin_dir else "/nonexistent")
    plan(args[0])  # cached before planning.plan is replaced by the cache
    monkeypatch.setattr(cli.planning, "plan", lambda ref, sets=(), root=None: plan(ref, *sets))
    return CliRunner().invoke(cli.app, ["status", *args])


def test_the_kubeconfig_output_reaches_the_cluster(monkeypatch, tmp_path, no_aws) -> None:
    """The EKS stack's outputs as `pulumi stack output --json --show-secrets` prints them (the kubeconfig a JSON
    string, as the stack exports it): status asks pulumi in the project directory, reads the cluster the kubeconfig
    names with its token, and puts the window the outputs state on the first line."""
    with fake_api({EKS_NODES: {"items": []}, "/api/v1/namespaces/kimi-k3/pods": {"items": []}}) as (url, seen):
        recorded = {"clusterName": "k3-eks", "kubeconfig": json.dumps(kubeconfig(url, "tok-from-outputs")),
                    "capacity": {"reservationId": "cr-0123456789abcdef0"},
                    "capacityStartTime": "2026-11-30T11:30:00Z", "capacityEndTime": "2099-12-14T11:30:00Z"}
        bin_dir = fake_pulumi(tmp_path / "bin", json.dumps(recorded))
        result = run(monkeypatch, bin_dir, "aws-eks", "--format", "json")
    assert result.exit_code == 3, result.output
    argv = (bin_dir / "argv").read_text().split()
    assert argv[1:] == ["stack", "output", "--json", "--show-secrets", "--non-interactive", "-s", "aws-eks"]
    assert Path(argv[0]) == planning.project_dir()
    assert {auth for _, auth in seen} == {"Bearer tok-from-outputs"}
    assert seen[0][0] == EKS_NODES
    doc = json.loads(result.stdout)
    first = doc["lines"][0]
    assert {k: first[k] for k in ("section", "name", "state", "phase")} == {
        "section": "capacity", "name": "capacity block cr-0123456789abcdef0", "state": "ok", "phase": "active"}
    assert first["capacity"]["source"] == "stack outputs"
    assert first["capacity"]["end"] == "2099-12-14T11:30:00Z"
    assert first["detail"].endswith("2026-11-30T11:30:00Z to 2099-12-14T11:30:00Z; no AWS credentials in the "
                                    "environment (AWS_PROFILE, keys, SSO or a credentials file)")
    assert doc["summary"] == "in progress: nodes gpu waiting for capacity"


def test_an_existing_cluster_stack_names_its_kubeconfig_file(monkeypatch, tmp_path) -> None:
    """kubernetes-b300 reads ~/.kube/config: its outputs name the file and the context; status reads that file."""
    with fake_api({EKS_NODES: {"items": []}}) as (url, seen):
        cfg = kubeconfig(url, "tok-file")
        cfg["contexts"].append({"name": "other", "context": {"cluster": "k3", "user": "k3"}})
        (tmp_path / "kc").write_text(json.dumps(cfg | {"current-context": "nowhere"}))
        bin_dir = fake_pulumi(tmp_path / "bin", json.dumps({"kubeconfigPath": str(tmp_path / "kc"),
                                                            "kubeContext": "other"}))
        result = run(monkeypatch, bin_dir, "kubernetes-b300", "--format", "json")
    assert result.exit_code == 3, result.output
    assert seen and {auth for _, auth in seen} == {"Bearer tok-file"}
    first = json.loads(result.stdout)["lines"][0]
    assert (first["section"], first["name"], first["state"], first["phase"]) == (
        "capacity", "existing nodes", "ok", "no reservation")


@pytest.mark.parametrize(("stdout", "code", "stderr", "message"), [
    ("", 255, "error: no stack named 'aws-eks' found\n",
     "error: pulumi stack output -s aws-eks: no stack named 'aws-eks' found"),
    ("{}\n", 0, "", "error: stack aws-eks has no outputs: it has not been deployed (`pulumi up -s aws-eks`), or "
     "give --kubeconfig"),
    ('{"clusterName": "k3-eks"}', 0, "", "error: stack aws-eks exports no kubeconfig or kubeconfigPath output "
     "(outputs: clusterName): give --kubeconfig"),
    ("Logging in...", 0, "", "error: pulumi stack output -s aws-eks: not JSON: 'Logging in...'"),
])
def test_outputs_that_name_no_cluster_end_in_one_line(monkeypatch, tmp_path, stdout, code, stderr, message) -> None:
    result = run(monkeypatch, fake_pulumi(tmp_path / "bin", stdout, code, stderr), "aws-eks")
    assert (result.exit_code, result.stderr.strip(), result.stdout) == (2, message, "")


def test_no_pulumi_on_path(monkeypatch) -> None:
    result = run(monkeypatch, None, "aws-eks")
    assert (result.exit_code, result.stderr.strip()) == (2, "error: pulumi is not on PATH: install the Pulumi CLI "
                                                            "(it reads the stack's outputs), or give --kubeconfig")


def test_the_kubeconfig_output_of_each_cloud_is_read(tmp_path) -> None:
    """A kubeconfig output as a mapping (YAML stacks' outputs) or text; the path form expands ``~``."""
    assert outputs.cluster_access("s", {"kubeconfig": {"a": 1}}).text == '{"a": 1}'
    assert outputs.cluster_access("s", {"kubeconfig": "apiVersion: v1", "kubeContext": "c"}).context == "c"
    assert outputs.cluster_access("s", {"kubeconfigPath": "~/kc"}).path == Path(os.path.expanduser("~/kc"))
    # The planted mistake: an empty kubeconfig output is not a cluster (the Azure stack's output before it exists).
    with pytest.raises(outputs.OutputsError, match="exports no kubeconfig"):
        outputs.cluster_access("s", {"kubeconfig": ""})
