"""Validators for rendered objects: the Kubernetes OpenAPI schema (strict) and the real CRDs (strict).

Kubernetes version: objects are validated against **1.33** (``resource.k8s.io/v1`` against 1.34, see
``SERVED_FROM``). ASSUMPTION: it is the oldest minor still in
standard support on all four managed services in the stacks' time frame (2026), so it is the floor a stack
can meet; validating against the floor catches a field an older control plane would reject (the newer
schemas only add fields). Every field k3infra sets exists since 1.28 (the StatefulSet pod-index label is the
newest).
"""

import functools
import re
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import kubernetes_validate
import kubernetes_validate.utils
import referencing
import yaml

from tests.support import CRDS

KUBERNETES_VERSION = "1.33"

SERVED_FROM: dict[str, str] = {"resource.k8s.io/v1": "1.34"}
"""APIs k3infra renders that 1.33 does not serve, validated at the first release that does: Dynamic Resource
Allocation went GA as resource.k8s.io/v1 in 1.34. The stacks that render them require that version (GKE A4X Max
1.34.3-gke.1318000, AKS GB300 1.35; tests/test_every_stack.py checks it)."""


def kubernetes_version(api_version: str) -> str:
    """The Kubernetes minor an object of ``api_version`` is validated against."""
    return SERVED_FROM.get(api_version, KUBERNETES_VERSION)

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml when PyYAML has it: the pure-Python loader takes ~50 s for the 2.7 MB of CRDs."""


@functools.lru_cache(maxsize=None)
def _definitions(schema_dir: str, minor: str) -> Any:
    return kubernetes_validate.utils.schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", minor)


@functools.lru_cache(maxsize=None)
def _kubernetes_validator(api_version: str, kind: str) -> jsonschema.protocols.Validator | None:
    """kubernetes-validate's strict schema for a kind, built once (its own ``validate`` re-reads the 5 MB of
    definitions on every call). None when the kind is not a built-in one."""
    minor = kubernetes_version(api_version)
    version = [v for v in kubernetes_validate.utils.all_versions() if v.startswith(minor + ".")][-1]
    schema_dir = f"v{version}-local-strict"
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = kubernetes_validate.utils.schema_contents(
            f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-{api}.json", minor)
    except FileNotFoundError:
        return None
    registry = referencing.Resource.from_contents(schema) @ referencing.Registry()
    registry = referencing.Resource.from_contents(_definitions(schema_dir, minor)) @ registry
    return jsonschema.Draft202012Validator(schema, registry=registry)


def validate_kubernetes(doc: dict[str, Any]) -> None:
    """Raise when ``doc`` is not a valid object of its kind (unknown fields fail: strict mode)."""
    v = _kubernetes_validator(doc["apiVersion"], doc["kind"])
    if v is None:
        raise LookupError(f"no Kubernetes {kubernetes_version(doc['apiVersion'])} schema for {doc['apiVersion']} "
                          f"{doc['kind']}")
    v.validate(doc)


def has_kubernetes_schema(doc: dict[str, Any]) -> bool:
    """True for a built-in kind (the Kubernetes schema knows it); False for a custom resource."""
    return _kubernetes_validator(doc["apiVersion"], doc["kind"]) is not None


def strict_schema(schema: Any) -> Any:
    """A CRD schema where every object with declared properties rejects unknown ones.

    The API server prunes unknown fields silently (they never reach the controller); here they fail, unless
    the CRD keeps them (``x-kubernetes-preserve-unknown-fields``) or says what extra keys may hold
    (``additionalProperties``).
    """
    if isinstance(schema, dict):
        out = {k: (strict_schema(v) if k not in ("enum", "default", "example") else v) for k, v in schema.items()}
        if isinstance(schema.get("properties"), dict):
            # Property names are not keywords: a property called ``default`` (GKE's policies) is a schema too.
            out["properties"] = {k: strict_schema(v) for k, v in schema["properties"].items()}
        if "properties" in out and "additionalProperties" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strict_schema(x) for x in schema]
    return schema


@functools.lru_cache(maxsize=None)
def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) to the served version's openAPIV3Schema, from schemas/crds (vendored)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for f in sorted(CRDS.glob("*.yaml")):
        crd = yaml.load(f.read_text(), Loader=_LOADER)
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for v in crd["spec"]["versions"]:
            if v.get("served"):
                out[(f"{group}/{v['name']}", kind)] = v["schema"]["openAPIV3Schema"]
    return out


@functools.lru_cache(maxsize=None)
def _validator(api_version: str, kind: str) -> jsonschema.Draft7Validator:
    schema = crd_schemas().get((api_version, kind))
    if schema is None:
        raise LookupError(f"no CRD for {api_version} {kind} in {CRDS} (vendor it: schemas/crds/SOURCES.md)")
    return jsonschema.Draft7Validator(strict_schema(schema))


def crd_errors(doc: dict[str, Any]) -> list[str]:
    """Schema violations of a custom resource against its CRD (strict), as readable strings."""
    v = _validator(doc["apiVersion"], doc["kind"])
    return [f"{'/'.join(map(str, e.path)) or '<root>'}: {e.message[:300]}" for e in v.iter_errors(doc)]


def embedded_pod_templates(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Pod templates inside a LeaderWorkerSet, as PodTemplate objects kubernetes-validate can check."""
    if doc.get("kind") != "LeaderWorkerSet":
        return
    lwt = doc["spec"]["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        if role in lwt:
            yield role, {"apiVersion": "v1", "kind": "PodTemplate",
                         "metadata": {"name": f"{doc['metadata']['name']}-{role}",
                                      "namespace": doc["metadata"].get("namespace")},
                         "template": lwt[role]}


def write_template_pods(files: list[Path], out: Path) -> list[Path]:
    """The pod templates inside every custom workload among ``files``, written to ``out`` as Pods (with the
    template's metadata, where k3infra writes the scan reasons) so checkov's Kubernetes checks, which know no
    custom kinds, scan them too."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for f in files:
        if f.name.endswith(".chart.yaml"):
            continue
        doc = load(f)
        for role, template in embedded_pod_templates(doc):
            t = template["template"]
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {**t.get("metadata", {}), "name": template["metadata"]["name"],
                                "namespace": template["metadata"].get("namespace")},
                   "spec": t["spec"]}
            path = out / f"{f.stem}-{role}.pod.yaml"
            path.write_text(yaml.safe_dump(pod, sort_keys=False))
            written.append(path)
    return written


def load(path: Path) -> dict[str, Any]:
    """One rendered file's document."""
    return yaml.load(path.read_text(), Loader=_LOADER)
