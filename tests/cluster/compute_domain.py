"""A stand-in for the NVIDIA DRA driver's ComputeDomain controller, for what scheduling needs of it.

The real controller (NVIDIA/k8s-dra-driver-gpu v25.12.0, cmd/compute-domain-controller) is not on the Go module
proxy, so it cannot be built here. What it does that decides whether a workload's pods schedule:

- for every ComputeDomain, it creates the workload channel ResourceClaimTemplate the domain names
  (``spec.channel.resourceClaimTemplate.name``) in the domain's namespace (resourceclaimtemplate.go
  ``WorkloadResourceClaimTemplateManager.Create`` with templates/compute-domain-workload-claim-template.tmpl.yaml):
  labels ``resource.nvidia.com/computeDomain: <domain uid>`` and ``resource.nvidia.com/computeDomainTarget:
  Workload`` (computedomain.go), one request ``channel`` of DeviceClass ``compute-domain-default-channel.nvidia.com``,
  and an opaque config for driver ``compute-domain.nvidia.com`` (``ComputeDomainChannelConfig``, ``domainID`` =
  the domain's uid, ``allocationMode`` = the domain's, CRD default ``Single``);
- when the domain is deleted, that template goes with it (cleanup.go, through the template's finalizer).

This stand-in reproduces exactly those two, by polling. It does not reproduce: the template's finalizer (it
deletes the template itself instead), the per-domain IMEX daemon DaemonSet and its daemon claim template in the
driver's namespace (daemonset.go; its pods run only on nodes the kubelet plugin labels once a workload pod's
channel is prepared, after scheduling), ComputeDomainCliques and the domain's ``status`` (written by the daemons;
with the default IMEXDaemonsWithDNSNames, ``numNodes`` gates nothing). The channel devices themselves are the
kubelet plugin's ResourceSlices (tests/cluster/dra.py).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from .local import LocalCluster

DOMAIN_LABEL = "resource.nvidia.com/computeDomain"
TARGET_LABEL = "resource.nvidia.com/computeDomainTarget"
CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"
DRIVER = "compute-domain.nvidia.com"
POLL_SECONDS = 0.5


def channel_template(domain: dict[str, Any]) -> dict[str, Any]:
    """The workload channel ResourceClaimTemplate the controller creates for ``domain``."""
    meta, spec = domain["metadata"], domain["spec"]
    uid = meta["uid"]
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": spec["channel"]["resourceClaimTemplate"]["name"], "namespace": meta["namespace"],
                     "labels": {DOMAIN_LABEL: uid, TARGET_LABEL: "Workload"}},
        "spec": {"spec": {"devices": {
            "requests": [{"name": "channel", "exactly": {"deviceClassName": CHANNEL_CLASS}}],
            "config": [{"requests": ["channel"], "opaque": {"driver": DRIVER, "parameters": {
                "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomainChannelConfig", "domainID": uid,
                "allocationMode": spec["channel"].get("allocationMode", "Single")}}}],
        }}},
    }


class ComputeDomainController:
    """Runs the stand-in in a thread against ``cluster`` until ``stop()``."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="compute-domain-controller", daemon=True)
        self.errors: list[str] = []

    def __enter__(self) -> ComputeDomainController:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _list(self, resource: str) -> list[dict[str, Any]]:
        proc = self.cluster.kubectl("get", resource, "-A", "-o", "json", check=False)
        if proc.returncode:
            return []
        return json.loads(proc.stdout)["items"]

    def reconcile(self) -> None:
        """One pass: create each domain's missing channel template, delete templates whose domain is gone."""
        domains = {d["metadata"]["uid"]: d for d in self._list("computedomains.resource.nvidia.com")}
        templates = [t for t in self._list("resourceclaimtemplates.resource.k8s.io")
                     if (t["metadata"].get("labels") or {}).get(TARGET_LABEL) == "Workload"]
        have = {t["metadata"]["labels"].get(DOMAIN_LABEL) for t in templates}
        for uid, domain in domains.items():
            if uid not in have and not domain["metadata"].get("deletionTimestamp"):
                proc = self.cluster.kubectl("create", "-f", "-", input=json.dumps(channel_template(domain)),
                                            check=False)
                if proc.returncode and "AlreadyExists" not in proc.stderr:
                    self.errors.append(proc.stderr.strip())
        for t in templates:
            if t["metadata"]["labels"].get(DOMAIN_LABEL) not in domains:
                self.cluster.kubectl("delete", "resourceclaimtemplate", "-n", t["metadata"]["namespace"],
                                     t["metadata"]["name"], "--wait=false", check=False)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.reconcile()
            self._stop.wait(POLL_SECONDS)


__all__ = ["ComputeDomainController", "channel_template"]
