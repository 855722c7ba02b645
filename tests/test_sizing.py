"""Every sizing rule, with the seed's fit table (002 §2.2) reproduced row by row."""

import pytest

from k3infra import sizing as sz
from k3infra.catalog import ACCELERATORS, ENGINES, GB, KIMI_K3, EngineName, Loader
from k3infra.catalog.gpus import SEED_FIT_TABLE
from k3infra.catalog.transfer import CPU_NODES

VLLM = ENGINES[EngineName.VLLM]
SGLANG = ENGINES[EngineName.SGLANG]

# 002 §2.2 as the seed prints it: configuration -> total VRAM, meets the requirement.
SEED_TABLE = {
    "8x B300 (288GB)": (2_304, True),
    "8x AMD MI355X": (2_304, True),
    "16x H200 (141GB)": (2_256, True),
    "16x B200 (180GB)": (2_880, True),
    "32x H100 (80GB)": (2_560, True),
    "8x B200 (180GB)": (1_440, False),
    "8x H200 (141GB)": (1_128, False),
}


@pytest.mark.parametrize("row", SEED_FIT_TABLE, ids=lambda c: c.label)
def test_seed_fit_table_row(row):
    total, meets = SEED_TABLE[row.label]
    f = sz.fit(KIMI_K3, row.gpus, row.gpu_memory_gb, VLLM.memory_fraction)
    assert f.nominal_gb == total
    assert f.fits is meets


def test_seed_fit_table_has_every_row_in_order():
    assert [c.label for c, _ in sz.seed_fit_table(KIMI_K3, 0.9)] == list(SEED_TABLE)


def test_fit_arithmetic():
    f = sz.fit(KIMI_K3, 8, 288, 0.9)
    assert f.usable_gb == pytest.approx(2_073.6)
    assert f.weights_gb == 1_560
    assert f.overhead_gb == 40
    assert f.kv_headroom_gb == pytest.approx(473.6)
    assert f.required_gb == 1_680  # the seed's figure at 8 GPUs


def test_a_lower_memory_fraction_can_turn_a_fit_into_a_miss():
    assert sz.fit(KIMI_K3, 16, 141, 0.85).fits
    assert not sz.fit(KIMI_K3, 16, 141, 0.5).fits


@pytest.mark.parametrize(
    "sku, nodes",
    [
        ("p6-b300.48xlarge", 1),  # 002 §2.3: AWS is self-contained on one node
        ("ml.p6-b300.48xlarge", 1),
        ("p5en.48xlarge", 2),
        ("Standard_ND128isr_GB300_v6", 2),  # 002 §4.1: at least 2 VMs
        ("a4x-maxgpu-4g-metal", 2),  # 002 §5.1: at least 2 nodes
        ("a4x-highgpu-4g", 3),  # 186 GB GB200s: 3 nodes hold it, but see test_a4x_default_is_seed_000s_tp16
        ("a4-highgpu-8g", 2),  # 000: 2 nodes
        ("a3-ultragpu-8g", 2),
        ("ecs.ebmgn8v.48xlarge", 3),  # 96 GB GPUs: not the seed's 2
    ],
)
def test_min_nodes(sku, nodes):
    assert sz.min_nodes(KIMI_K3, ACCELERATORS[sku], VLLM.memory_fraction) == nodes


@pytest.mark.parametrize("engine", [VLLM, SGLANG], ids=lambda e: str(e.name))
def test_a4x_default_is_seed_000s_tp16_on_4_nodes_and_says_why_not_3(engine):
    a = ACCELERATORS["a4x-highgpu-4g"]
    # 3 x 4 x 186 GB = 2,232 GB; x 0.95 (vLLM) = 2,120.4 or x 0.85 (SGLang, 000) = 1,897.2 usable; K3 needs
    # 1,560 + 12 x 5 + 80 = 1,700 GB. 2 nodes give 1,413.6 / 1,264.8: too little.
    assert not sz.fit(KIMI_K3, 8, 186, engine.memory_fraction).fits
    f3 = sz.fit(KIMI_K3, 12, 186, engine.memory_fraction)
    assert f3.fits and f3.required_gb == 1_700
    choice = sz.default_nodes(KIMI_K3, a, engine.memory_fraction)
    assert choice == sz.NodeChoice(
        nodes=4, min_nodes=3, tensor_parallel=16,
        reason="4 x a4x-highgpu-4g, not the 3 that hold Kimi K3: 12 GPUs admit no power-of-two tensor parallelism "
               "across all of them (TP=4 x PP=3 at best), 16 run TP=16 over multi-node NVLink")
    s = sz.size(KIMI_K3, a, engine)
    assert (s.nodes, s.min_nodes, s.layout.tensor_parallel, s.layout.pipeline_parallel) == (4, 3, 16, 1)
    assert (s.layout.mode, s.layout.interconnect) == (sz.ParallelMode.MULTI_NODE_NVLINK, "multi-node NVLink (MNNVL)")
    assert s.fit.usable_gb == pytest.approx(2_976 * engine.memory_fraction)
    assert s.warnings == (f"nodes: {choice.reason}",)
    # 4 nodes = 4 VMs of one 18-VM sub-block: 4 replicas fit one pool (16 nodes), a fifth would not.
    assert 4 * s.nodes <= a.max_nodes_per_pool < 5 * s.nodes


def test_a4x_on_3_nodes_runs_pipeline_stages_and_states_what_it_costs():
    ly = sz.layout(ACCELERATORS["a4x-highgpu-4g"], 3)
    assert (ly.tensor_parallel, ly.pipeline_parallel, ly.mode) == (4, 3, sz.ParallelMode.PIPELINE_ACROSS_NODES)
    assert ly.warnings == ()  # 12 GPUs: no power-of-two TP over MNNVL exists to compare with
    s = sz.size(KIMI_K3, ACCELERATORS["a4x-highgpu-4g"], SGLANG, nodes=3)
    assert s.warnings == ()  # a count the stack chose itself is the layout's to explain
    with pytest.raises(sz.LayoutError, match="tensorParallel 8 does not divide the 12 GPUs of 3 x a4x-highgpu-4g"):
        sz.layout(ACCELERATORS["a4x-highgpu-4g"], 3, tensor_parallel=8)


def test_a4x_tp16_by_hand_is_the_default():
    ly = sz.layout(ACCELERATORS["a4x-highgpu-4g"], 4, tensor_parallel=16)
    assert ly == sz.layout(ACCELERATORS["a4x-highgpu-4g"], 4)
    assert ly.statement == ("TP=16 x PP=1 on 4 x a4x-highgpu-4g: tensor parallelism across 4 nodes of one NVLink "
                            "domain; each replica's pods claim the IMEX channel of a ComputeDomain (NVIDIA DRA "
                            "driver): one per replica, or one that all replicas share under a scaler")


def test_default_nodes_keeps_the_minimum_where_it_already_runs_one_tp_group():
    for sku in ("a4x-maxgpu-4g-metal", "Standard_ND128isr_GB300_v6", "a4-highgpu-8g", "ecs.ebmgn8v.48xlarge"):
        c = sz.default_nodes(KIMI_K3, ACCELERATORS[sku], VLLM.memory_fraction)
        assert c is not None and c.nodes == c.min_nodes, sku
    assert sz.default_nodes(KIMI_K3, ACCELERATORS["a4x-highgpu-4g"], 0.01) is None


def test_min_nodes_is_none_when_no_pool_can_hold_the_model():
    a = ACCELERATORS["a4x-maxgpu-4g-metal"]
    assert sz.min_nodes(KIMI_K3, a, memory_fraction=0.01) is None


def test_default_layout_tp_inside_nvlink_domain_pp_across():
    # GB300 NVL72: one NVLink domain spans the two nodes, so TP=8 across them (002 §4.4). The stacks claim a
    # ComputeDomain for it, so there is nothing to warn about.
    ly = sz.layout(ACCELERATORS["a4x-maxgpu-4g-metal"], 2)
    assert (ly.tensor_parallel, ly.pipeline_parallel, ly.tp_spans_nodes) == (8, 1, True)
    assert (ly.interconnect, ly.mode, ly.multi_node_nvlink, ly.warnings) == (
        "multi-node NVLink (MNNVL)", sz.ParallelMode.MULTI_NODE_NVLINK, True, ())
    assert "ComputeDomain" in ly.statement
    # HGX nodes: TP per node, PP across nodes, no warning (nothing faster exists on those GPUs).
    ly = sz.layout(ACCELERATORS["ecs.ebmgn8v.48xlarge"], 3)
    assert (ly.tensor_parallel, ly.pipeline_parallel, ly.tp_spans_nodes, ly.warnings) == (8, 3, False, ())
    assert (ly.mode, ly.multi_node_nvlink) == (sz.ParallelMode.PIPELINE_ACROSS_NODES, False)
    assert "ESTIMATE" not in ly.statement
    ly = sz.layout(ACCELERATORS["p6-b300.48xlarge"], 1)
    assert (ly.tensor_parallel, ly.pipeline_parallel, ly.interconnect) == (8, 1, "NVLink (inside one node)")
    assert ly.mode == sz.ParallelMode.ONE_NODE


@pytest.mark.parametrize("sku", ["a4x-maxgpu-4g-metal", "Standard_ND128isr_GB300_v6"])
def test_pipeline_fallback_states_its_mode_and_estimated_cost(sku: str) -> None:
    """002 appendix item 2: TP=4 x PP=2 needs no multi-node NVLink; the plan says so and what it costs."""
    ly = sz.layout(ACCELERATORS[sku], 2, tensor_parallel=4, pipeline_parallel=2)
    assert (ly.mode, ly.multi_node_nvlink, ly.tp_spans_nodes) == (sz.ParallelMode.PIPELINE_ACROSS_NODES, False, False)
    assert ly.statement.startswith(f"TP=4 x PP=2 on 2 x {sku}: tensor parallelism inside each node, pipeline stages "
                                   "across nodes")
    assert "ESTIMATE: 70%-90% of the throughput of TP=8 over multi-node NVLink" in ly.statement
    assert "up to 2x its time per output token" in ly.statement
    assert ly.warnings == (f"parallel layout: {ly.statement}",)


def test_three_gb300_nodes_fall_back_to_tp_per_node():
    ly = sz.layout(ACCELERATORS["Standard_ND128isr_GB300_v6"], 3)  # 12 GPUs: TP=12 would not split heads
    assert (ly.tensor_parallel, ly.pipeline_parallel) == (4, 3)


def test_tp_across_rdma_warns_and_names_the_interconnect():
    # Seed 000: TP=16 over two A4 nodes.
    ly = sz.layout(ACCELERATORS["a4-highgpu-8g"], 2, tensor_parallel=16)
    assert (ly.tensor_parallel, ly.pipeline_parallel, ly.tp_spans_nodes) == (16, 1, True)
    assert ly.interconnect == "RoCEv2 (GPUDirect RDMA), 8 x 400 Gbps per node"
    assert ly.warnings == (
        "TP=16 spans 2 nodes over RoCEv2 (GPUDirect RDMA), 8 x 400 Gbps per node instead of NVLink: all-reduce across "
        "the node boundary is slower than inside the NVLink domain (the default keeps TP=8 per node with pipeline "
        "parallelism across nodes)",
    )


def test_explicit_pipeline_parallel_derives_tp():
    ly = sz.layout(ACCELERATORS["Standard_ND128isr_GB300_v6"], 2, pipeline_parallel=2)
    assert (ly.tensor_parallel, ly.pipeline_parallel, ly.tp_spans_nodes) == (4, 2, False)


@pytest.mark.parametrize(
    "tp, pp, message",
    [
        (3, None, "tensorParallel 3 does not divide the 16 GPUs of 2 x a4-highgpu-8g"),
        (8, 4, "tensorParallel 8 x pipelineParallel 4 = 32, but 2 x a4-highgpu-8g has 16 GPUs"),
        (None, 5, "pipelineParallel 5 does not divide the 16 GPUs"),
    ],
)
def test_impossible_layouts(tp, pp, message):
    with pytest.raises(sz.LayoutError) as e:
        sz.layout(ACCELERATORS["a4-highgpu-8g"], 2, tensor_parallel=tp, pipeline_parallel=pp)
    assert str(e.value) == message


def test_tp_must_be_a_power_of_two():
    with pytest.raises(sz.LayoutError, match="tensorParallel 6 is not a power of two"):
        sz.layout(ACCELERATORS["ecs.ebmgn8v.48xlarge"], 3, tensor_parallel=6)


def test_expert_parallel_spans_the_tp_group():
    assert sz.layout(ACCELERATORS["p6-b300.48xlarge"], 1, expert_parallel=True).expert_parallel == 8
    assert sz.layout(ACCELERATORS["p6-b300.48xlarge"], 1).expert_parallel == 1


def test_load_estimates_per_loader():
    # A download or copy fetches the whole checkpoint on every node; FUSE and the streamer only each node's share.
    hf = sz.load_estimate(KIMI_K3, Loader.HUGGINGFACE, nodes=2)
    assert hf.bytes_per_node == 1_560 * GB
    assert hf.fetch_seconds == 12_480  # 1.56 TB at 1 Gbps, the pessimistic end
    assert hf.optimistic_fetch_seconds == 1_248  # at 10 Gbps
    assert hf.local_read_seconds == 98  # this node's 780 GB from NVMe at 64 Gbps
    copy = sz.load_estimate(KIMI_K3, Loader.BUCKET_COPY, nodes=2)
    assert (copy.fetch_seconds, copy.seconds) == (624, 722)  # 1.56 TB at 20 Gbps, then 780 GB from NVMe
    fuse = sz.load_estimate(KIMI_K3, Loader.FUSE, nodes=2)
    assert (fuse.bytes_per_node, fuse.seconds) == (780 * GB, 624)  # at 10 Gbps
    streamer = sz.load_estimate(KIMI_K3, Loader.STREAMER, nodes=2)
    assert (streamer.bytes_per_node, streamer.seconds) == (780 * GB, 312)  # at 20 Gbps
    assert "ASSUMPTION" in streamer.assumption


def test_seed_002_download_extremes():
    # 002 §2.1: minutes on a 100 Gbps line, 30+ hours on 100 Mbps.
    fast = sz.load_estimate(KIMI_K3, Loader.HUGGINGFACE, nodes=1, bandwidth_gbps=100)
    slow = sz.load_estimate(KIMI_K3, Loader.HUGGINGFACE, nodes=1, bandwidth_gbps=0.1)
    assert fast.fetch_seconds < 10 * 60
    assert slow.fetch_seconds > 30 * 3600
    assert slow.assumption == "stack setting: 0.1 Gbps per node"


def test_draft_model_adds_to_the_load():
    base = sz.load_estimate(KIMI_K3, Loader.FUSE, nodes=2)
    with_draft = sz.load_estimate(KIMI_K3, Loader.FUSE, nodes=2, with_draft_model=True)
    assert with_draft.bytes_per_node == base.bytes_per_node + 20 * GB


def test_probe_budget_is_one_and_a_half_times_load_plus_warmup_in_whole_periods():
    assert sz.probe_budget_seconds(156, 600) == 1_140
    assert sz.probe_budget_seconds(1, 600) == 910  # 901.5 rounded up to a 10 s period
    assert sz.await_timeout_seconds(1_140) == 1_140 + 300 + 120


def test_cost_per_hour_and_month():
    c = sz.cost(ACCELERATORS["p6-b300.48xlarge"], 1)
    assert (c.hourly_low, c.hourly_high) == (59.0, 142.0)
    # 002 §8: USD 43,000-104,000 per month for one 8x B300 node.
    assert (c.monthly_low, c.monthly_high) == (43_070.0, 103_660.0)
    assert not c.estimate
    assert sz.cost(ACCELERATORS["a4x-maxgpu-4g-metal"], 2).estimate


def test_size_puts_it_together():
    s = sz.size(KIMI_K3, ACCELERATORS["a4-highgpu-8g"], SGLANG, nodes=2, tensor_parallel=16, loader=Loader.FUSE,
                with_draft_model=True, sync_node=CPU_NODES["e2-standard-8"], sync_nodes=2)
    assert (s.nodes, s.min_nodes, s.fit.fits, s.layout.tensor_parallel) == (2, 2, True, 16)
    assert s.fit.usable_gb == pytest.approx(2_448)
    assert s.probe_budget_seconds == sz.probe_budget_seconds(s.load.seconds, SGLANG.warmup_seconds)
    # 1.60 TB (weights + draft) by 2 workers of 20 streams (16 Gbps / 0.8 Gbps a stream) at min(2 x 16, 100,
    # 2 x 20 x 0.8) = 32 Gbps, the NICs' term: the busiest worker's 800 GB + one largest file (25 GB) at 16 Gbps
    assert s.sync is not None and (s.sync.gbps, s.sync.bytes_per_worker, s.sync.streams) == (32, 825 * GB, 20)
    assert s.sync.limit == "the sync nodes' NICs: 2 x 16 Gbps (the system nodes: this cloud's deployment builds no sync pool)"
    assert not s.sync.pool
    # the longer of Google Cloud IAM's stated propagation (the grant exists before the Job) and start-up, then the
    # bytes
    assert s.cold_start.sync_seconds == s.sync.seconds == max(420, 180) + 413
    # the sync ends before the GPU pool, the image pre-pull and the fabric check (150 s, catalog.fabric.CHECK_SECONDS):
    # the critical path is cluster, pool, pre-pull, fabric check
    assert s.fabric is not None and [(p.name, p.expect, p.expected_busbw_gbs) for p in s.fabric.paths] == [
        ("tensor-parallel", "rdma", 400.0)]
    assert s.cold_start.total_seconds == 900 + 1_500 + 300 + 150 + s.load.seconds + 600
    assert s.cold_start.bottleneck == "GPU pool"
    assert s.as_dict()["layout"] == {"tensorParallel": 16, "pipelineParallel": 1, "expertParallel": 1,
                                     "tpSpansNodes": True, "interconnect": s.layout.interconnect,
                                     "mode": "tensor-over-fabric", "statement": s.layout.statement}


def test_size_defaults_to_the_minimum_nodes_and_replicas_multiply_cost():
    s = sz.size(KIMI_K3, ACCELERATORS["ecs.ebmgn8v.48xlarge"], VLLM, replicas=2)
    assert (s.nodes, s.total_nodes) == (3, 6)
    assert s.cost.hourly_low == 6 * ACCELERATORS["ecs.ebmgn8v.48xlarge"].price.low


def test_cold_start_takes_the_longer_branch():
    slow_sync = sz.ColdStart(cluster_seconds=900, gpu_pool_seconds=1_500, sync_seconds=4_000, image_pull_seconds=300,
                             load_seconds=100, warmup_seconds=600)
    assert slow_sync.bottleneck == "weight sync"
    # the image was pulled on the GPU nodes while the sync ran: the path is cluster, sync, load, warm-up
    assert slow_sync.total_seconds == 900 + 4_000 + 100 + 600
    assert [(p.name, p.start_seconds, p.critical) for p in slow_sync.phases] == [
        ("cluster", 0, True), ("GPU pool", 900, False), ("image pre-pull", 2_400, False), ("weight sync", 900, True),
        ("load", 4_900, True), ("warm-up", 5_000, True)]
    # a platform that pulls the image only when the server starts puts the pull on the path after both branches
    late_pull = sz.ColdStart(cluster_seconds=900, gpu_pool_seconds=1_500, sync_seconds=4_000, image_pull_seconds=300,
                             load_seconds=100, warmup_seconds=600, image_pre_pulled=False)
    assert late_pull.total_seconds == 900 + 4_000 + 300 + 100 + 600
    fast_sync = sz.ColdStart(cluster_seconds=900, gpu_pool_seconds=1_500, sync_seconds=1_700, image_pull_seconds=300,
                             load_seconds=100, warmup_seconds=600)
    # 1,700 s of sync is less than the pool and the pre-pull (1,800 s): the pool is the bottleneck
    assert (fast_sync.bottleneck, fast_sync.total_seconds) == ("GPU pool", 900 + 1_800 + 100 + 600)
    assert fast_sync.above_target is not None and fast_sync.above_target.startswith(
        "cluster 15 min + GPU pool 25 min + warm-up 10 min = 50 min on the critical path alone")
    existing = sz.ColdStart(cluster_seconds=0, gpu_pool_seconds=0, sync_seconds=1_000, image_pull_seconds=300,
                            load_seconds=300, warmup_seconds=600)
    assert (existing.total_seconds, existing.above_target) == (1_900, None)


def test_sync_on_its_own_pool_overlaps_the_node_with_the_grants():
    """The pool's node comes up while the grant propagates: the sync waits for the longer of the two."""
    from k3infra.catalog.transfer import SYNC_POOLS
    from k3infra.catalog import Cloud

    gcp, azure = SYNC_POOLS[Cloud.GCP], SYNC_POOLS[Cloud.AZURE]
    g = sz.sync_estimate(KIMI_K3, False, gcp.node, 2, 2, streams=40, pool=True, region="us-central1")
    # node up 300 + start-up 180 > IAM's 420; 804.4 GB at 32 Gbps = 202 s
    assert (g.seconds, g.transfer_seconds, g.limit) == (480 + 202, 202, "the sync nodes' NICs: 2 x 32 Gbps")
    us = sz.sync_estimate(KIMI_K3, False, azure.node, 2, 2, streams=30, pool=True, region="eastus2")
    asia = sz.sync_estimate(KIMI_K3, False, azure.node, 2, 2, streams=30, pool=True, region="southeastasia")
    # Azure's grants (600 s) outlast node and start-up; a storage account takes 60 Gbps in the US, 25 elsewhere
    assert (us.seconds, us.limit) == (600 + 269, "the sync nodes' NICs: 2 x 24 Gbps")
    assert (asia.gbps, asia.limit, asia.seconds) == (25, "bucket ingress 25 Gbps", 600 + 515)
    assert max(g.seconds, us.seconds) <= 906  # ai-on-eks's K3 copy Job


    no_sync = sz.size(KIMI_K3, ACCELERATORS["p6-b300.48xlarge"], VLLM, sync=False)
    assert (no_sync.cold_start.sync_seconds, no_sync.cold_start.bottleneck) == (0, "GPU pool")
    assert sz.sync_seconds(KIMI_K3, with_draft_model=False) == 12_480  # a copy by hand at 1 Gbps
