"""Computed outputs of Kubernetes resources."""

from typing import Any

from .registry import provider_default, resource


@provider_default("kubernetes:")
def kubernetes_object(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Objects keep their metadata; a name the program left out is filled in from the resource name."""
    meta = dict(inputs.get("metadata") or {})
    if "metadata" in inputs or inputs.get("kind"):
        meta.setdefault("name", name)
        return {"metadata": meta}
    return {}


@resource("kubernetes:core/v1:Service")
def service(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A load balancer Service gets an ingress address: private when it carries internal annotations (every
    cloud's internal switch is an annotation), else public (TEST-NET-3)."""
    meta = dict(inputs.get("metadata") or {})
    meta.setdefault("name", name)
    spec = inputs.get("spec") or {}
    out: dict[str, Any] = {"metadata": meta}
    if spec.get("type") == "LoadBalancer":
        internal = name.endswith("-internal")
        ip = f"10.128.0.{sum(name.encode()) % 250 + 1}" if internal else f"203.0.113.{sum(name.encode()) % 250 + 1}"
        out["status"] = {"loadBalancer": {"ingress": [{"ip": ip}]}}
    return out


@resource("kubernetes:gateway.networking.k8s.io/v1:Gateway")
def gateway(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A Gateway is programmed with one address (private range; the class decides in a real cluster)."""
    meta = dict(inputs.get("metadata") or {})
    meta.setdefault("name", name)
    return {"metadata": meta, "status": {"addresses": [{"type": "IPAddress",
                                                        "value": f"10.128.1.{sum(name.encode()) % 250 + 1}"}]}}
