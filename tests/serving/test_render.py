"""Rendered manifests of every shape: one file per object in apply order, valid against the Kubernetes schema
(strict) and the real CRDs (strict), scanned by checkov, and free of secrets."""

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from k3infra import render
from k3infra.observability import verify_job
from k3infra.serving import scan
from tests.serving.shapes import API_KEY, HF_TOKEN, SHAPES, record_shape
from tests.validation import (
    KUBERNETES_VERSION,
    crd_errors,
    crd_schemas,
    embedded_pod_templates,
    has_kubernetes_schema,
    load,
    validate_kubernetes,
    write_template_pods,
)
from tests.support import checkov_binary


SKIPPABLE = {*scan.SERVER_SKIPS, *scan.SERVER_NO_CPU_MEMORY, *scan.SYNC_SKIPS, *scan.WORKER_SKIPS, scan.SECRET_ENV,
             *scan.NODE_AGENT_SKIPS,
             scan.ADDED_CAPABILITIES, *verify_job.SKIPS}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Every shape rendered into its own directory under one root (checkov scans the root once)."""
    root = tmp_path_factory.mktemp("render")
    return {name: render.write(record_shape(name).recording, root / name) for name in SHAPES}


def objects(rendered: dict[str, list[Path]]) -> list[tuple[str, Path, dict[str, Any]]]:
    return [(shape, p, load(p)) for shape, paths in rendered.items() for p in paths if not p.name.endswith(".chart.yaml")]


# ---------------------------------------------------------------------------------------------------------
# Files and order


def test_one_file_per_kubernetes_registration(rendered: dict[str, list[Path]]) -> None:
    for shape, paths in rendered.items():
        rec = record_shape(shape).recording
        expected = [r for r in rec.resources if r.type.startswith("kubernetes:")]
        assert len(paths) == len(expected), shape
        assert [p.name[:4] for p in paths] == [f"{i:03d}-" for i in range(1, len(paths) + 1)]


def test_apply_order_for_the_leaderworkerset_shape(rendered: dict[str, list[Path]]) -> None:
    assert [p.name for p in rendered["gb300"]] == [
        "001-namespace-kimi-k3.yaml",
        "002-namespace-lws-system.yaml",
        "003-helmchart-lws-system-lws.chart.yaml",
        "004-networkpolicy-kimi-k3-k3-fabric.yaml",
        "005-networkpolicy-kimi-k3-k3-pre-pull.yaml",
        "006-serviceaccount-kimi-k3-k3-fabric.yaml",
        "007-serviceaccount-kimi-k3-k3-server.yaml",
        "008-serviceaccount-kimi-k3-k3-weight-sync.yaml",
        "009-secret-kimi-k3-k3-hf-token.yaml",
        "010-networkpolicy-kimi-k3-k3-sync.yaml",
        "011-configmap-kimi-k3-k3-fabric-code.yaml",
        "012-configmap-kimi-k3-k3-sync-copier.yaml",
        # the fabric check's leader may patch its report into its own Job (serving.fabric_report)
        "013-role-kimi-k3-k3-fabric.yaml",
        "014-rolebinding-kimi-k3-k3-fabric.yaml",
        "015-service-kimi-k3-k3-fabric-0.yaml",
        # the engine image onto the GPU nodes while the weights sync
        "016-daemonset-kimi-k3-k3-pre-pull.yaml",
        # the fabric check on the group's own pods, beside the sync; the server after both
        "017-job-kimi-k3-k3-fabric-0.yaml",
        "018-job-kimi-k3-k3-sync.yaml",
        "019-networkpolicy-kimi-k3-k3-node-agent.yaml",
        "020-networkpolicy-kimi-k3-k3-server.yaml",
        "021-service-kimi-k3-k3-server.yaml",
        "022-service-kimi-k3-k3-server-internal.yaml",
        # the weights and the engine's caches kept on every GPU node, once the sync's copier exists (issue 40)
        "023-daemonset-kimi-k3-k3-node-agent.yaml",
        "024-leaderworkerset-kimi-k3-k3-server-lws.yaml",
        # the checklist Job after the server (depends on it): the 002 §7 checks once the server is ready
        "025-networkpolicy-kimi-k3-k3-verify.yaml",
        "026-serviceaccount-kimi-k3-k3-verify.yaml",
        "027-configmap-kimi-k3-k3-verify-code.yaml",
        "028-role-kimi-k3-k3-verify.yaml",
        "029-rolebinding-kimi-k3-k3-verify.yaml",
        "030-job-kimi-k3-k3-verify.yaml",
    ]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_dependency_comes_before_its_dependent(shape: str) -> None:
    items = render.apply_order(record_shape(shape).recording)
    position = {it.registration.urn: i for i, it in enumerate(items)}
    rec = record_shape(shape).recording
    for i, it in enumerate(items):
        for dep in it.registration.dependencies:
            if dep in position:
                assert position[dep] < i, (it.registration.name, rec.get(dep).name)
    kinds = [it.kind for it in items]
    assert kinds[0] == "Namespace"
    charts = [i for i, k in enumerate(kinds) if k == "HelmChart"]
    custom = [i for i, it in enumerate(items) if it.kind in ("LeaderWorkerSet", "InferencePool", "Gateway", "HTTPRoute")]
    assert all(c < x for c in charts for x in custom), "charts (CRDs, controllers) before custom resources"


def test_chart_file_names_the_chart_and_its_values(rendered: dict[str, list[Path]]) -> None:
    (chart,) = [p for p in rendered["gb300"] if p.name.endswith(".chart.yaml")]
    text = chart.read_text()
    assert text.startswith("# A Helm chart Pulumi installs")
    assert "helm install lws oci://registry.k8s.io/lws/charts/lws --version 0.10.0 --namespace lws-system" in text
    assert "--repo" not in text  # an oci:// chart names its registry itself
    assert load(chart) == {"chart": "oci://registry.k8s.io/lws/charts/lws", "version": "0.10.0", "release": "lws",
                           "namespace": "lws-system", "values": {}}


# ---------------------------------------------------------------------------------------------------------
# Schema validation


def test_every_object_validates_in_strict_mode(rendered: dict[str, list[Path]]) -> None:
    """kubernetes-validate, Kubernetes {KUBERNETES_VERSION}, strict (unknown fields fail); custom resources
    against their vendored CRD (schemas/crds) with unknown fields rejected."""
    builtin = custom = 0
    for shape, path, doc in objects(rendered):
        if has_kubernetes_schema(doc):
            validate_kubernetes(doc)
            builtin += 1
        else:
            errors = crd_errors(doc)
            assert not errors, f"{shape}/{path.name}: {errors}"
            for role, tmpl in embedded_pod_templates(doc):
                validate_kubernetes(tmpl)
                assert role
            custom += 1
    lws = sum(1 for s in SHAPES.values() if s.config.get("k3infra:workload", "leaderworkerset") == "leaderworkerset"
              and s.config.get("k3infra:accelerator") != "p6-b300.48xlarge")
    # + the gateway, route and GKE's two policies (the InferencePool is the endpoint picker chart's)
    assert builtin >= 50 and custom == lws + 4, (builtin, custom)


def test_every_custom_resource_kind_has_its_crd(rendered: dict[str, list[Path]]) -> None:
    kinds = {(d["apiVersion"], d["kind"]) for _, _, d in objects(rendered) if not has_kubernetes_schema(d)}
    assert kinds == {("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
                     ("gateway.networking.k8s.io/v1", "Gateway"),
                     ("gateway.networking.k8s.io/v1", "HTTPRoute"),
                     ("networking.gke.io/v1", "HealthCheckPolicy"),
                     ("networking.gke.io/v1", "GCPBackendPolicy")}
    assert kinds <= set(crd_schemas())


def _first(rendered: dict[str, list[Path]], kind: str) -> dict[str, Any]:
    return next(copy.deepcopy(d) for _, _, d in objects(rendered) if d["kind"] == kind)


def test_validators_reject_unknown_fields(rendered: dict[str, list[Path]]) -> None:
    """The validation can fail: a misspelt field is caught by each validator."""
    deployment = _first(rendered, "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["startupProbes"] = {}
    with pytest.raises(Exception, match="startupProbes"):
        validate_kubernetes(deployment)
    lws = _first(rendered, "LeaderWorkerSet")
    lws["spec"]["leaderWorkerTemplate"]["restartPolicyy"] = "None"
    assert any("restartPolicyy" in e for e in crd_errors(lws))
    lws = _first(rendered, "LeaderWorkerSet")
    lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["envv"] = []
    assert any("envv" in e for e in crd_errors(lws)), "the pod template inside the CRD is checked strictly too"
    route = _first(rendered, "HTTPRoute")
    route["spec"]["rules"][0]["backendRef"] = []
    assert any("backendRef" in e for e in crd_errors(route))


def test_kubernetes_version_is_stated() -> None:
    assert KUBERNETES_VERSION == "1.33"


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "Job"])
def test_cached_validator_agrees_with_kubernetes_validate(rendered: dict[str, list[Path]], kind: str) -> None:
    """validation.py builds kubernetes-validate's strict schemas once; its own validate() agrees with it."""
    import kubernetes_validate

    doc = _first(rendered, kind)
    assert kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True) == KUBERNETES_VERSION
    doc["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    with pytest.raises(Exception, match="imagePullPolicyy"):
        validate_kubernetes(doc)


# ---------------------------------------------------------------------------------------------------------
# Secrets


def test_no_token_in_any_rendered_file(rendered: dict[str, list[Path]]) -> None:
    for paths in rendered.values():
        for p in paths:
            text = p.read_text()
            assert HF_TOKEN not in text and API_KEY not in text, p.name


def test_secret_files_keep_their_shape_with_masked_values(rendered: dict[str, list[Path]]) -> None:
    secret = next(load(p) for p in rendered["p6-b300"] if "secret-kimi-k3-k3-api-key" in p.name)
    assert secret["stringData"] == {"api-key": "[secret]"}
    validate_kubernetes(secret)


# ---------------------------------------------------------------------------------------------------------
# checkov


def test_checkov_finds_no_failed_check_without_a_written_reason(rendered: dict[str, list[Path]]) -> None:
    root = next(iter(rendered.values()))[0].parent.parent
    templates = [p for shape, files in rendered.items() for p in write_template_pods(files, root / f"{shape}-pods")]
    assert templates, "no LeaderWorkerSet shape: the templates inside custom workloads go unscanned"
    proc = subprocess.run(
        [checkov_binary(), "-d", str(root), "--framework", "kubernetes", "-o", "json", "--compact",
         "--skip-download"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.stdout.strip(), proc.stderr[-2000:]
    reports = json.loads(proc.stdout)
    report = reports if isinstance(reports, dict) else next(r for r in reports if r["check_type"] == "kubernetes")
    summary = report["summary"]
    failed = report["results"].get("failed_checks", [])
    assert not failed, "\n".join(f"{c['check_id']} {c['resource']} {c['file_path']}: {c['check_name']}" for c in failed)
    assert summary["parsing_errors"] == 0
    assert summary["passed"] > 400
    # every skip carries a reason written on the object
    skipped = report["results"]["skipped_checks"]
    assert summary["skipped"] == len(skipped) > 0
    for c in skipped:
        reason = (c.get("check_result") or {}).get("suppress_comment") or ""
        assert len(reason) > 20, f"{c['check_id']} on {c['resource']} is skipped without a reason"
    assert {c["check_id"] for c in skipped} <= set(SKIPPABLE), "a new kind of exception needs a reason in scan.py"
