"""The Kubernetes objects the Google Cloud package itself creates pass checkov (or skip a check with a reason).

Runs on the rendered ``gcp-a4-sglang`` stack, the one with GCP-owned objects (the gIB NCCL installer
DaemonSet, the RDMA ``Network`` / ``GKENetworkParamSet`` objects). Serving's objects are scanned by
serving's own tests. Needs checkov: ``scripts/test`` exports ``K3INFRA_CHECKOV``.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from k3infra import render
from tests.support import plan

GCP_OWNED_PREFIX = "k3-gpu"
"""Pulumi names of the objects GkeGpuNodePool creates."""


def checkov() -> str:
    path = os.environ.get("K3INFRA_CHECKOV") or shutil.which("checkov")
    if not path:
        pytest.skip("checkov is not installed: run through scripts/test (it sets K3INFRA_CHECKOV)")
    return path


def test_gcp_objects_pass_checkov(tmp_path: Path) -> None:
    binary = checkov()
    rec = plan("gcp-a4-sglang").recording
    files = render.write(rec, tmp_path)
    owned = {f.name for f, item in zip(files, render.apply_order(rec))
             if item.registration.name.startswith(GCP_OWNED_PREFIX)}
    assert any("daemonset-kube-system-nccl-rdma-installer" in n for n in owned)
    out = subprocess.run([binary, "-d", str(tmp_path), "--framework", "kubernetes", "-o", "json", "--quiet"],
                         capture_output=True, text=True, timeout=600)
    report = json.loads(out.stdout)
    reports = report if isinstance(report, list) else [report]
    failed = [(Path(c["file_path"]).name, c["check_id"]) for r in reports
              for c in r.get("results", {}).get("failed_checks", [])]
    ours = [f for f in failed if f[0] in owned]
    assert ours == [], f"checks the GCP objects fail without a skip reason: {ours}"
