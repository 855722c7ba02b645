"""Every stack's load, restart and cold start at the pessimistic end of its figures (issue 26), in one table that
the loader tests (tests/test_loaders.py) and the command's (tests/test_cli.py) both assert."""

from typing import NamedTuple


class Figures(NamedTuple):
    """One stack's expected figures (times in seconds)."""

    load: int
    """The load."""
    limit: str
    """What limits the load ("" where the loader states no limit)."""
    restart: int
    """The restart."""
    total: int
    """The cold start: the critical path."""
    bottleneck: str
    """The parallel branch on the critical path."""
    sync_meets_anchor: bool | None
    """The sync at or under ai-on-eks's 906 s; None with no sync."""
    why: str | None
    """Part of what the plan says keeps the cold start above 45 min; None when it does not."""


_FIFTY_MINUTES_SERIAL = "= 50 min on the critical path alone"

STACK_FIGURES = {
    "alicloud-ack": Figures(2496, "its share of the bucket's egress: 5 Gbps / 3 node(s)", 3216, 6870, "weight sync",
                            False, "weight sync (limited by bucket ingress 5 Gbps) and the load (limited by its share "
                            "of the bucket's egress: 5 Gbps / 3 node(s))"),
    # PAI-EAS creates no cluster and no GPU pool (issue 36, minor 9: 5,796 s before): the image pull, the load and
    # the warm-up on the resource group's machines
    "alicloud-pai": Figures(2496, "its share of the bucket's egress: 5 Gbps / 3 node(s)", 3216, 3396, "image pull", None,
                            "the image pull and the load (limited by its share of the bucket's egress: 5 Gbps / 3 "
                            "node(s)) on the critical path, with warm-up 10 min"),
    "aws-eks": Figures(144, "Mountpoint for Amazon S3 (aws-mountpoint-s3-csi-driver): 8 file(s) x 16 requests x "
                       "0.68 Gbps", 864, 3444, "GPU pool", True, _FIFTY_MINUTES_SERIAL),
    # HyperPod's restarts read the weights back from the instance's NVMe (issue 40: 1,539 s before); its cold start
    # keeps the operator's prefetch figure for the load (819 s), above the first fill and read back (287 s + 130 s)
    "aws-hyperpod": Figures(819, "", 850, 4119, "GPU pool", True, _FIFTY_MINUTES_SERIAL),
    # the GPU pool waits 60 minutes for its grant on the reservation group beside the cluster (issue 36, minor 8:
    # 3,404 s before)
    "azure-gb300": Figures(104, "its share of the bucket's egress: 120 Gbps / 2 node(s)", 464, 6254, "GPU pool", True,
                           "grant propagation 60 min + GPU pool 25 min + warm-up 10 min = 95 min on the critical path "
                           "alone"),
    # GKE's restarts read the weights back from the node's Local SSD (issue 40: 580 s, 516 s and 740 s before); the
    # fabric check's 150 s on the GPU pool branch (issue 39: 3,460 s, 3,456 s and 3,620 s before)
    # every node fetches the whole checkpoint through gcsfuse's file cache: the streamer's ranks read every file's
    # header first (independent review of issue 36, MAJOR-1: 80 s, 500 s and 3,380 s before)
    "gcp-a4-sglang": Figures(160, "gcsfuse (GKE Cloud Storage FUSE CSI driver): 8 file(s) x 100 requests x 0.1 Gbps",
                             554, 3610, "GPU pool", True, _FIFTY_MINUTES_SERIAL),
    "gcp-a4xmax": Figures(156, "gcsfuse (GKE Cloud Storage FUSE CSI driver): 4 file(s) x 100 requests x 0.1 Gbps",
                          458, 3606, "GPU pool", True, _FIFTY_MINUTES_SERIAL),
    "gcp-a4x-sglang": Figures(320, "gcsfuse (GKE Cloud Storage FUSE CSI driver): 4 file(s) x 100 requests x 0.1 Gbps",
                              620, 3770, "GPU pool", True, _FIFTY_MINUTES_SERIAL),
    "kubernetes-b300": Figures(1248, "its share of the bucket's egress: 10 Gbps / 1 node(s)", 1968, 3315, "weight sync",
                               False, "the load (limited by its share of the bucket's egress: 10 Gbps / 1 node(s))"),
    "kubernetes-gb300-nvl72": Figures(1248, "its share of the bucket's egress: 10 Gbps / 2 node(s)", 1968, 3315,
                                      "weight sync", False, "the load (limited by its share of the bucket's egress: "
                                      "10 Gbps / 2 node(s))"),
}
# The disaggregated stacks (issue 37): the stack's load is its prefill group's alone (config/topology.py), the same
# shape as the aggregated stack it comes from; its cold start ends with each role's own fabric check, load and warm-up,
# every node of both roles reading the bucket at once (the review of issue 37's loader class: on
# kubernetes-gb300-nvl72-pd the prefill's 780 GB per node at 10 Gbps / 6 nodes take 3,744 s, past the 2,780 s start-up
# budget sized for 10 Gbps / 2), and its restart is the slowest role's (each role's own in sizing.topology).
STACK_FIGURES.update({
    "gcp-a4xmax-pd": STACK_FIGURES["gcp-a4xmax"]._replace(total=3638),
    "azure-gb300-pd": STACK_FIGURES["azure-gb300"]._replace(restart=672, total=6462),
    # the decode's two-node groups run the fabric check the one-node prefill does not (150 s before the decode's load)
    "aws-eks-pd": STACK_FIGURES["aws-eks"]._replace(total=3522),
    "kubernetes-gb300-nvl72-pd": STACK_FIGURES["kubernetes-gb300-nvl72"]._replace(
        restart=4464, total=5811, why="the load (limited by its share of the bucket's egress: 10 Gbps / 6 node(s))"),
})
