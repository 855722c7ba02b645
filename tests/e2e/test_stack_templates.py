"""The real CLI against the project's layout: ``pulumi stack init``, ``config set`` and ``stack rm`` write and delete
the live configuration (Pulumi.yaml's stackConfigDir, live/) and leave every template under stacks/ as it was."""

import shutil
import subprocess
import sys

from .pulumi_cli import ROOT, Workspace


def test_stack_init_config_set_and_stack_rm_never_touch_a_template(cli_workspace) -> None:
    ws: Workspace = cli_workspace((ROOT / "Pulumi.yaml").read_text())
    shutil.copytree(ROOT / "stacks", ws.project / "stacks")
    shutil.copytree(ROOT / "live", ws.project / "live", ignore=shutil.ignore_patterns("Pulumi.*.yaml"))
    before = {p.name: p.read_bytes() for p in (ws.project / "stacks").iterdir()}
    init = subprocess.run([sys.executable, "-m", "k3infra", "init", "kubernetes-b300"], cwd=ws.project, env=ws.env,
                          capture_output=True, text=True, timeout=120)
    assert init.returncode == 0, init.stderr
    live = ws.project / "live" / "Pulumi.kubernetes-b300.yaml"
    ws.stack_init("kubernetes-b300")
    ws.cli("config", "set", "--secret", "k3infra:hfToken", "hf_templatesStayTemplates", "-s", "kubernetes-b300")
    ws.cli("config", "set", "k3infra:replicas", "1", "-s", "kubernetes-b300")
    text = live.read_text()
    assert "encryptionsalt:" in text and "k3infra:hfToken:" in text and "secure:" in text
    ws.cli("stack", "rm", "--yes", "kubernetes-b300")
    assert not live.exists()
    assert {p.name: p.read_bytes() for p in (ws.project / "stacks").iterdir()} == before
