"""The local try-out (docs/try-it.md): ``scripts/local-cluster start --stack STACK`` gives the local control plane what
an existing-cluster stack expects of a user's cluster, so ``pulumi up`` of that stack runs without a GPU.

- kwok GPU nodes shaped like the stack's own (its plan's ``gpuNodes`` output: the labels its server selects, the
  taints it tolerates, the catalog's GPUs, vCPUs, memory and architecture: tests/e2e/cluster_objects.py, the nodes
  the e2e tests use) and two CPU nodes for the weight sync;
- where the stack's replicas span nodes over multi-node NVLink, what the NVIDIA DRA driver it says is present
  brings: its ComputeDomain CRD, DeviceClasses, the kubelet plugin's slices on every GPU node, and the stand-in of
  its controller (tests/cluster/compute_domain.py), run as a background process;
- an S3-compatible bucket on loopback (moto's server, as tests/weightcopy and tests/e2e use), created with the
  stack's bucket name and a small fixture, run as a background process.

What it starts is recorded in ``DIR/tryout.json`` and ended by ``scripts/local-cluster stop``. kwok runs no
container: the pods go Running and Ready and Jobs succeed, with nothing inside them (no weights are read, no
model is served). It needs the project's virtualenv (k3infra, moto, boto3); scripts/local-cluster re-runs itself
under .venv/bin/python when --stack is given.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from .local import ROOT, LocalCluster

STATE = "tryout.json"
COMPUTE_DOMAIN_CRD = ROOT / "schemas" / "crds" / "nvidia-dra-computedomains.yaml"
S3_KEYS = ("AKIALOCALTRYOUT00001", "local-try-out-secret-key")
"""moto accepts any key pair; these are what docs/try-it.md sets as the stack's S3 secrets."""


class TryoutError(RuntimeError):
    """A stack the try-out cannot stand in for, or a process that did not start."""


def start(cluster: LocalCluster, stack: str) -> dict[str, Any]:
    """Prepares ``cluster`` for ``stack`` (idempotent while the same stack's try-out runs); returns its state."""
    from k3infra import planning
    from k3infra.catalog import Cloud
    from tests.e2e import cluster_objects

    plan = planning.plan(stack)
    cfg = plan.config
    if cfg.cloud != Cloud.KUBERNETES:
        names = [s for s in planning.stack_names(ROOT) if planning.validate(planning.load(s)).cloud == Cloud.KUBERNETES]
        raise TryoutError(f"stack {stack} deploys to {cfg.cloud}; the local try-out stands in for an existing cluster: "
                          f"{', '.join(names)}")
    state = read(cluster)
    if state and state["stack"] != stack:
        raise TryoutError(f"the local cluster runs the try-out of {state['stack']}: scripts/local-cluster stop first")
    gpu, cpu = cluster_objects.gpu_nodes(plan), cluster_objects.cpu_nodes()
    _apply(cluster, [*gpu, *cpu])
    pids = dict((state or {}).get("pids") or {})
    if cfg.sizing.layout.multi_node_nvlink:
        _dra_driver(cluster, [n["metadata"]["name"] for n in gpu])
        if not _alive(pids.get("compute-domain-controller"), cluster):
            pids["compute-domain-controller"] = _daemon(cluster, "compute-domain-controller")
    endpoint = (state or {}).get("s3Endpoint")
    if not _alive(pids.get("s3"), cluster):
        from tests.ports import free_port
        port = free_port()
        pids["s3"] = _daemon(cluster, "s3", str(port))
        endpoint = f"http://127.0.0.1:{port}"
        _bucket(endpoint, cfg.weights.bucket)
    state = {"stack": stack, "gpuNodes": [n["metadata"]["name"] for n in gpu], "s3Endpoint": endpoint,
             "bucket": cfg.weights.bucket, "lws": str(cfg.kubernetes.lws) if cfg.kubernetes else None,
             "s3AccessKeyId": S3_KEYS[0], "s3SecretAccessKey": S3_KEYS[1], "pids": pids}
    (cluster.dir / STATE).write_text(json.dumps(state, indent=2) + "\n")
    return state


def read(cluster: LocalCluster) -> dict[str, Any] | None:
    """The running try-out's state, or None."""
    try:
        return json.loads((cluster.dir / STATE).read_text())
    except (FileNotFoundError, ValueError):
        return None


def stop(cluster: LocalCluster) -> None:
    """Ends the try-out's background processes (SIGTERM, then SIGKILL) and forgets its state."""
    for pid in ((read(cluster) or {}).get("pids") or {}).values():
        if not _alive(pid, cluster):
            continue
        os.killpg(pid, signal.SIGTERM)
        end = time.monotonic() + 10
        while _alive(pid, cluster) and time.monotonic() < end:
            time.sleep(0.1)
        if _alive(pid, cluster):
            os.killpg(pid, signal.SIGKILL)
    (cluster.dir / STATE).unlink(missing_ok=True)


def describe(state: dict[str, Any], cluster: LocalCluster) -> list[str]:
    """What the try-out gives, for ``start`` and ``status`` to print."""
    return [f"try-out of {state['stack']}: GPU nodes {', '.join(state['gpuNodes'])} (kwok: pods run nothing)",
            f"S3 bucket {state['bucket']} at {state['s3Endpoint']} (moto), key id {state['s3AccessKeyId']}, "
            f"secret key {state['s3SecretAccessKey']}",
            *(f"{name}: {'running, pid ' + str(pid) if _alive(pid, cluster) else 'not running'}"
              for name, pid in state["pids"].items()),
            "the stack's settings for this cluster (docs/try-it.md step 2, after `pulumi stack init STACK`):",
            *(f"  pulumi config set {setting} -s STACK" for setting in settings(state, cluster))]


def settings(state: dict[str, Any], cluster: LocalCluster) -> list[str]:
    """The ``pulumi config set`` arguments that point a stack at this cluster and its bucket."""
    out = [f"--path k3infra:kubernetes.kubeconfigPath {cluster.kubeconfig}",
           f"--path k3infra:kubernetes.storage.endpoint {state['s3Endpoint']}"]
    if state.get("lws") == "install":  # the local cluster runs the LWS controller already (out of cluster)
        out.append("--path k3infra:kubernetes.lws present")
    return out + [f"--secret k3infra:s3AccessKeyId {state['s3AccessKeyId']}",
                  f"--secret k3infra:s3SecretAccessKey {state['s3SecretAccessKey']}"]


def _apply(cluster: LocalCluster, objects: list[dict[str, Any]]) -> None:
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=k3infra-tryout", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))


def _dra_driver(cluster: LocalCluster, gpu_nodes: list[str]) -> None:
    import yaml

    from . import dra
    from .deploy import served_crd

    crd = served_crd(yaml.safe_load(COMPUTE_DOMAIN_CRD.read_text()))
    _apply(cluster, [crd])
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{crd['metadata']['name']}")
    _apply(cluster, [*dra.compute_domain_classes(), *(dra.compute_domain_slice(n) for n in gpu_nodes)])


def _daemon(cluster: LocalCluster, what: str, *args: str) -> int:
    """Starts ``python -m tests.cluster.tryout WHAT DIR ARGS`` in a session of its own (it outlives this command),
    its output in DIR/logs/WHAT.log; its command line names DIR, so a recycled pid is never taken for it."""
    log = open(cluster.dir / "logs" / f"{what}.log", "ab")
    proc = subprocess.Popen([sys.executable, "-m", "tests.cluster.tryout", what, str(cluster.dir), *args], cwd=ROOT,
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    time.sleep(0.5)
    if proc.poll() is not None:
        raise TryoutError(f"{what} did not start: {(cluster.dir / 'logs' / f'{what}.log').read_text()[-1500:]}")
    return proc.pid


def _alive(pid: int | None, cluster: LocalCluster) -> bool:
    if not pid:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z" and str(cluster.dir).encode() in cmdline


def _bucket(endpoint: str, bucket: str, timeout: float = 60) -> None:
    import boto3

    from tests.e2e.s3_server import FIXTURE

    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(endpoint, timeout=2).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise TryoutError(f"moto's S3 server did not answer at {endpoint} within {timeout:.0f} s") from None
            time.sleep(0.3)
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=S3_KEYS[0],
                      aws_secret_access_key=S3_KEYS[1])
    s3.create_bucket(Bucket=bucket)
    for key, body in FIXTURE.items():
        s3.put_object(Bucket=bucket, Key=key, Body=body)


def _serve(what: str, directory: str, args: list[str]) -> None:
    """The background processes themselves."""
    if what == "s3":
        from moto.server import main as moto_main

        moto_main(["-H", "127.0.0.1", "-p", args[0]])
    elif what == "compute-domain-controller":
        from .compute_domain import ComputeDomainController

        controller = ComputeDomainController(LocalCluster(directory, tie_to_parent=False))
        signal.signal(signal.SIGTERM, lambda *_: controller.stop())
        controller.__enter__()
        while controller._thread.is_alive():
            controller._thread.join(timeout=1)
    else:
        raise SystemExit(f"unknown: {what}")


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2], sys.argv[3:])
