"""docs/choosing.md's selection-criteria table is what the plans say (k3infra.choosing)."""

import pytest

from k3infra import choosing, planning
from k3infra.catalog import ACCELERATORS
from k3infra.sizing import cost

ROOT = planning.project_dir()
PAGE = ROOT / "docs" / "choosing.md"


def test_the_committed_table_is_what_the_plans_say():
    page = PAGE.read_text()
    regenerated = choosing.replace_table(page, choosing.criteria_table(ROOT))
    assert page == regenerated, (
        "docs/choosing.md's criteria table no longer matches `k3infra plan` of the stacks (a cost or cold start "
        "changed): regenerate it with `.venv/bin/python -m k3infra.choosing` and commit the page")


def test_every_row_carries_its_stacks_plan_figures():
    table = choosing.criteria_table(ROOT)
    plans = choosing.sizings(ROOT)
    assert set(plans) == {"aws-hyperpod", "aws-eks", "gcp-a4xmax", "gcp-a4x-sglang", "gcp-a4-sglang", "azure-gb300",
                          "alicloud-pai", "gcp-a4xmax-pd", "azure-gb300-pd", "aws-eks-pd", "kubernetes-gb300-nvl72-pd"}
    for name, s in plans.items():
        # the figures `k3infra plan NAME --format json` prints under sizing.cost and sizing.coldStart
        summary = s.as_dict()
        cost_ = summary["cost"]
        cold = summary["coldStart"]
        assert isinstance(cost_, dict) and isinstance(cold, dict)
        row = next(line for line in table.splitlines() if f"| `{name}` |" in line)
        assert f"{cost_['monthlyLow']:,.0f}-{cost_['monthlyHigh']:,.0f}" in row
        assert f"({cold['bottleneck']}) |" in row
    rows = [line for line in table.splitlines()[2:]]
    assert len(rows) == sum(len(c.stacks) for c in choosing.CRITERIA) + 1  # + the Vertex AI row


def test_the_hyperpod_row_reads_as_its_plan():
    row = next(line for line in choosing.criteria_table(ROOT).splitlines() if "`aws-hyperpod`" in line)
    assert row == ("| Fastest PoC, minimal operations burden | AWS HyperPod: self-contained on a single node, the "
                   "Inference Operator abstracts most of it | `aws-hyperpod` | 1 x ml.p6-b300.48xlarge | "
                   "43,070-103,660 | " + row.split(" | ")[-1])
    assert "(ESTIMATE)" not in row  # 002 §8 states the B300 price


def test_vertex_ai_is_priced_at_its_rack_minimum():
    c = cost(ACCELERATORS["a4x-highgpu-4g"], 18)
    assert (c.hourly_low, c.hourly_high) == (510.3, 2_052.9)  # 18 x 28.35, 18 x 114.05
    assert choosing.vertex_a4x_row() == (
        "| Minimize small-pilot cost | what to avoid: Vertex AI, minimum 18 replicas (002 §5.6) | not built | "
        "18 x a4x-highgpu-4g | 372,519-1,498,617 (ESTIMATE) | not planned |")


def test_a_page_without_markers_is_refused():
    with pytest.raises(ValueError, match="lacks the markers"):
        choosing.replace_table("# no table here\n", "| a |\n")


def test_a_stale_table_is_caught():
    page = PAGE.read_text()
    stale = page.replace("43,070-103,660", "1-2", 1)
    assert stale != page
    assert choosing.replace_table(stale, choosing.criteria_table(ROOT)) == page


def test_the_readme_links_the_page():
    assert "[Choosing a platform](docs/choosing.md)" in (ROOT / "README.md").read_text()
