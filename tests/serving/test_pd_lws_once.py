"""The LeaderWorkerSet controller is installed once per stack, however many roles run LeaderWorkerSets (the
independent review of the PD stacks, B2: each role's ModelServer created ``lws-system`` and the chart again)."""

import pytest

from tests.support import plan

PD = ("gcp-a4xmax-pd", "azure-gb300-pd", "aws-eks-pd", "kubernetes-gb300-nvl72-pd")


@pytest.mark.parametrize("stack", PD)
def test_one_lws_namespace_and_chart_per_stack(stack: str) -> None:
    rec = plan(stack).recording
    rows = rec.ordered()
    names = [(r.type, r.name) for r in rows]
    lws = [(t, n) for t, n in names if n.endswith(("-lws-namespace", "-lws")) and "lws" in n]
    # the first role running a LeaderWorkerSet installs it: prefill where its group spans nodes, else decode
    first = "decode" if stack == "aws-eks-pd" else "prefill"
    assert lws == [("kubernetes:core/v1:Namespace", f"k3-{first}-lws-namespace"),
                   ("kubernetes:helm.sh/v4:Chart", f"k3-{first}-lws")]
