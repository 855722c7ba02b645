"""``k3infra:charts.<name>.repository``: a pinned chart from the user's mirror (config.charts, serving.chart_source).

Every problem is refused before any resource, all at once, each with its key, the value and what is allowed; the plan
says where each chart comes from. The real CLI and provider install a local chart directory in
tests/e2e/test_pd_stack.py.
"""

from pathlib import Path

import pytest
import yaml

from k3infra.catalog.charts import CHARTS, LWS_CHART, PICKER_CHART, pinned_chart
from k3infra.config import ConfigError
from k3infra.config.charts import ALLOWED
from k3infra import offline, webhook_reach

from tests.support import plan

STACK = "kubernetes-gb300-nvl72-pd"
KEY = "k3infra:charts.llm-d-router-gateway.repository"


def _chart(root: Path, name: str = "llm-d-router-gateway", version: str = "v0.10.0", deps: tuple[str, ...] = (),
           packed: tuple[str, ...] = ()) -> Path:
    chart = root / "llm-d-router-gateway"
    chart.mkdir(parents=True)
    doc = {"apiVersion": "v2", "name": name, "version": version,
           **({"dependencies": [{"name": d, "version": "0.0.0", "repository": "file://../x"} for d in deps]}
              if deps else {})}
    (chart / "Chart.yaml").write_text(yaml.safe_dump(doc))
    for sub in packed:
        (chart / "charts" / sub).mkdir(parents=True)
        (chart / "charts" / sub / "Chart.yaml").write_text(yaml.safe_dump({"apiVersion": "v2", "name": sub,
                                                                           "version": "0.0.0"}))
    return root


def _problems(*sets: str) -> list[str]:
    with pytest.raises(ConfigError) as e:
        plan(STACK, *sets)
    return sorted(str(p) for p in e.value.problems if "charts" in p.key)


def _epp(p) -> dict:
    return offline.plain(p.recording.one("kubernetes:helm.sh/v4:Chart", "k3-gateway-epp").inputs)


def test_without_mirrors_every_chart_comes_from_upstream() -> None:
    p = plan(STACK)
    assert p.config.charts == {}
    assert p.charts == ["k3-gateway-epp: oci://ghcr.io/llm-d/charts/llm-d-router-gateway v0.10.0",
                        "k3-prefill-lws: oci://registry.k8s.io/lws/charts/lws 0.10.0"]
    assert "chartMirrors" not in p.to_json()


def test_an_oci_mirror_and_an_https_repository_keep_the_pin() -> None:
    p = plan(STACK, "charts.llm-d-router-gateway.repository=oci://harbor.internal:8443/mirror/llm-d",
             "charts.lws.repository=https://charts.internal/lws")
    assert p.charts == [
        "k3-gateway-epp: oci://harbor.internal:8443/mirror/llm-d/llm-d-router-gateway v0.10.0 (mirror of "
        f"{PICKER_CHART[0]}: k3infra:charts)",
        f"k3-prefill-lws: lws from https://charts.internal/lws 0.10.0 (mirror of {LWS_CHART[0]}: k3infra:charts)"]
    assert p.to_json()["chartMirrors"] == {"llm-d-router-gateway": "oci://harbor.internal:8443/mirror/llm-d",
                                           "lws": "https://charts.internal/lws"}
    lws = offline.plain(p.recording.one("kubernetes:helm.sh/v4:Chart", "k3-prefill-lws").inputs)
    assert (lws["chart"], lws["version"], lws["repositoryOpts"]) == ("lws", "0.10.0",
                                                                    {"repo": "https://charts.internal/lws"})
    # the values are the ones the upstream chart gets: only where it comes from changed
    assert _epp(p)["values"] == _epp(plan(STACK))["values"]


def test_a_local_directory_holding_the_pinned_chart(tmp_path: Path) -> None:
    root = _chart(tmp_path, deps=("router",), packed=("router",))
    p = plan(STACK, f"charts.llm-d-router-gateway.repository={root}")
    epp = _epp(p)
    assert (epp["chart"], epp["version"]) == (f"{root}/llm-d-router-gateway", "v0.10.0")
    assert "repositoryOpts" not in epp


def test_every_problem_at_once_with_key_value_and_what_is_allowed(tmp_path: Path) -> None:
    wrong = _chart(tmp_path / "wrong", name="other", version="v0.9.0", deps=("router",))
    assert _problems(f"charts.llm-d-router-gateway.repository={wrong}",
                     "charts.lws.repository=oci://mirror.example/charts/lws",
                     "charts.keda.repository=https://kedacore.github.io/charts") == sorted([
        f"{KEY}: {wrong}/llm-d-router-gateway/Chart.yaml names 'other', not 'llm-d-router-gateway' (given: "
        f"'{wrong}'; allowed: {ALLOWED})",
        f"{KEY}: {wrong}/llm-d-router-gateway/Chart.yaml is version 'v0.9.0'; the pinned version is 'v0.10.0' (Helm "
        f"does not check a local chart's version) (given: '{wrong}'; allowed: {ALLOWED})",
        f"{KEY}: {wrong}/llm-d-router-gateway/Chart.yaml depends on 'router', which {wrong}/llm-d-router-gateway/"
        f"charts/ lacks (run `helm dependency build` on it) (given: '{wrong}'; allowed: {ALLOWED})",
        "k3infra:charts.lws.repository: names the chart itself: give the path that holds it (the chart is "
        f"REPOSITORY/lws) (given: 'oci://mirror.example/charts/lws'; allowed: {ALLOWED})",
        "k3infra:charts.keda: is not a known key (given: {'repository': 'https://kedacore.github.io/charts'}; "
        "allowed: keys llm-d-router-gateway, lws)",
    ])


@pytest.mark.parametrize("value, reason", [
    ("http://charts.internal/llm-d", "is plain HTTP: a chart repository is read over https"),
    ("oci://mirror.example/charts:v0.10.0", "is not an OCI registry path (lower-case path, no :tag or @digest: the "
                                            "pinned version is added)"),
    ("charts/llm-d", "is not a chart repository"),
    ("/nonexistent/charts", "holds no chart llm-d-router-gateway/ (no /nonexistent/charts/llm-d-router-gateway/"
                            "Chart.yaml where `pulumi up` runs; `helm pull --untar -d` the pinned chart there)"),
])
def test_a_malformed_mirror_is_refused(value: str, reason: str) -> None:
    assert _problems(f"charts.llm-d-router-gateway.repository={value}") == [
        f"{KEY}: {reason} (given: '{value}'; allowed: {ALLOWED})"]


def test_a_mirrored_chart_keeps_the_facts_of_the_chart_it_stands_for(tmp_path: Path) -> None:
    """What reads charts by reference (webhook reach, the plan's lines) finds the pinned chart behind a mirror, and
    only at the pinned version."""
    assert pinned_chart(f"{tmp_path}/llm-d-router-gateway", "v0.10.0") is CHARTS[PICKER_CHART]
    assert pinned_chart("lws", "0.10.0") is CHARTS[LWS_CHART]
    assert pinned_chart("oci://mirror.example/charts/lws", "0.9.0") is None
    assert pinned_chart("oci://mirror.example/charts/keda", "2.20.2") is None


def test_a_mirrored_chart_serves_the_webhooks_of_the_chart_it_stands_for() -> None:
    """The webhook reach check reads charts by reference: LWS from a mirror still serves its five webhooks (and
    nothing is reported as a chart without facts)."""
    upstream = plan(STACK).recording.resources
    mirrored = plan(STACK, "charts.lws.repository=oci://mirror.example/charts",
                    "charts.llm-d-router-gateway.repository=https://charts.internal/llm-d").recording.resources
    assert webhook_reach.served(mirrored)[1] == []
    assert webhook_reach.inventory(mirrored) == webhook_reach.inventory(upstream) != []
