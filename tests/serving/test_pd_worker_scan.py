"""A vLLM DEP group's worker pods serve HTTP and are probed (--data-parallel-hybrid-lb): their templates carry no
"workers serve no HTTP" checkov skip (the independent review of the PD stacks, m3); a TEP group's workers still do."""

import pytest

from tests.support import plan


def _skips(template: dict) -> set[str]:
    notes = template.get("metadata", {}).get("annotations") or {}
    return {v.split("=", 1)[0] for k, v in notes.items() if k.startswith("checkov.io/skip")}


@pytest.mark.parametrize("stack", ["gcp-a4xmax-pd", "kubernetes-gb300-nvl72-pd"])
def test_decode_workers_are_probed_and_not_skipped(stack: str) -> None:
    rec = plan(stack).recording
    sets = {r.name: r.inputs["spec"]["leaderWorkerTemplate"] for r in rec.ordered()
            if r.type == "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"}
    decode, prefill = sets["k3-decode-workload"]["workerTemplate"], sets["k3-prefill-workload"]["workerTemplate"]
    engine = next(c for c in decode["spec"]["containers"] if c["name"] == "engine")
    assert engine.get("readinessProbe") and engine.get("livenessProbe")
    assert not {"CKV_K8S_8", "CKV_K8S_9"} & _skips(decode)
    assert {"CKV_K8S_8", "CKV_K8S_9"} <= _skips(prefill)  # a TEP worker serves no HTTP
