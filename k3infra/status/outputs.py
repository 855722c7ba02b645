"""A deployed stack's outputs, read through the Pulumi CLI, and the cluster they name.

``pulumi stack output --json --show-secrets --non-interactive -s STACK`` in the project directory (where ``Pulumi.yaml`` is) prints
the outputs of the stack's last update as one JSON object, secrets in the clear (they stay on this machine: the
kubeconfig is loaded in memory, its key files live in a private temporary directory while it loads). Every cloud's
stack exports ``kubeconfig`` (a secret: EKS's ``aws eks get-token``, GKE's ``gke-gcloud-auth-plugin``, AKS's cluster
user, ACK's certificate); an existing-cluster stack exports its ``kubeconfig`` secret, or ``kubeconfigPath`` and
``kubeContext`` when the stack reads a file (a path on the machine that ran ``pulumi up``).

Every failure is a :class:`OutputsError` whose message is one line, for exit code 2.
"""

import json
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PULUMI_TIMEOUT_SECONDS = 120.0
"""``pulumi stack output`` reads the backend (a bucket or Pulumi Cloud): seconds, not minutes."""

KUBECONFIG, KUBECONFIG_PATH, KUBE_CONTEXT = "kubeconfig", "kubeconfigPath", "kubeContext"
"""The outputs that name the cluster (k3infra/<cloud>/deployment.py, k3infra/kubernetes/deployment.py)."""

Runner = Callable[[Sequence[str], Path], "subprocess.CompletedProcess[str]"]


class OutputsError(Exception):
    """The stack's outputs could not be read or name no cluster; the message is one line and says what to do."""


def _run(argv: Sequence[str], cwd: Path) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, timeout=PULUMI_TIMEOUT_SECONDS,
                          check=False, stdin=subprocess.DEVNULL)


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[0].removeprefix("error: ") if lines else ""


def read(stack: str, project: Path, run: Runner = _run) -> dict[str, Any]:
    """The stack's outputs (``pulumi stack output --json --show-secrets -s STACK`` run in ``project``)."""
    pulumi = shutil.which("pulumi")
    if pulumi is None:
        raise OutputsError("pulumi is not on PATH: install the Pulumi CLI (it reads the stack's outputs), or give "
                           "--kubeconfig")
    # --non-interactive: a passphrase-protected stack without PULUMI_CONFIG_PASSPHRASE says so instead of prompting
    argv = [pulumi, "stack", "output", "--json", "--show-secrets", "--non-interactive", "-s", stack]
    try:
        proc = run(argv, project)
    except subprocess.TimeoutExpired:
        raise OutputsError(f"pulumi stack output -s {stack}: no answer within {PULUMI_TIMEOUT_SECONDS:g} s "
                           "(is the backend reachable? `pulumi whoami`)") from None
    except OSError as e:
        raise OutputsError(f"pulumi stack output -s {stack}: {e}") from None
    if proc.returncode:
        why = _first_line(proc.stderr) or _first_line(proc.stdout) or f"exit code {proc.returncode}"
        raise OutputsError(f"pulumi stack output -s {stack}: {why}")
    try:
        outputs = json.loads(proc.stdout or "{}")
    except ValueError:
        raise OutputsError(f"pulumi stack output -s {stack}: not JSON: {_first_line(proc.stdout)[:80]!r}") from None
    if not isinstance(outputs, dict):
        raise OutputsError(f"pulumi stack output -s {stack}: expected a JSON object, got {type(outputs).__name__}")
    if not outputs:
        raise OutputsError(f"stack {stack} has no outputs: it has not been deployed (`pulumi up -s {stack}`), "
                           "or give --kubeconfig")
    return outputs


@dataclass(frozen=True)
class ClusterAccess:
    """How the outputs reach the cluster: a kubeconfig's text, or a file's path, and its context."""

    text: str | None = None
    path: Path | None = None
    context: str | None = None

    @property
    def source(self) -> str:
        """Where the kubeconfig came from, for messages."""
        return f"stack output {KUBECONFIG_PATH} ({self.path})" if self.path else f"stack output {KUBECONFIG}"


def cluster_access(stack: str, outputs: dict[str, Any]) -> ClusterAccess:
    """The cluster the outputs name: ``kubeconfig`` (a JSON or YAML document, or a mapping), else
    ``kubeconfigPath`` with ``kubeContext``."""
    value = outputs.get(KUBECONFIG)
    if isinstance(value, dict):
        return ClusterAccess(text=json.dumps(value), context=outputs.get(KUBE_CONTEXT) or None)
    if isinstance(value, str) and value.strip():
        return ClusterAccess(text=value, context=outputs.get(KUBE_CONTEXT) or None)
    path = outputs.get(KUBECONFIG_PATH)
    if isinstance(path, str) and path.strip():
        return ClusterAccess(path=Path(path).expanduser(), context=outputs.get(KUBE_CONTEXT) or None)
    raise OutputsError(f"stack {stack} exports no {KUBECONFIG} or {KUBECONFIG_PATH} output (outputs: "
                       f"{', '.join(sorted(outputs)) or 'none'}): give --kubeconfig")
