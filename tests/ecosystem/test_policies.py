"""The policy pack: every rule passes on every stack and fires on its bad example with a clear message; the
pack (policies/__main__.py) adapts the rules to pulumi-policy."""

import json
import runpy

import pytest
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    PolicyResourceOptions,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy import proxy

from k3infra import policy_rules as pr
from k3infra.policy_rules import startup
from k3infra.catalog import LOADER_PROFILES, Loader

from ..support import ROOT, STACKS, plan
from . import policy_programs as pp

RULE_NAMES = [r.name for r in pr.RULES]


def messages(violations: list[pr.Violation], policy: str) -> list[str]:
    return [v.message for v in violations if v.policy == policy]


@pytest.mark.parametrize("stack", STACKS)
def test_every_policy_passes_on_every_stack(stack: str) -> None:
    violations = pr.evaluate(pp.resources(plan(stack).recording))
    assert violations == []


@pytest.mark.parametrize("good", [pp.good_gpu, pp.good_buckets, pp.good_endpoints, pp.good_startup,
                                  pp.good_lws_and_gateway])
def test_good_programs_pass(good) -> None:
    assert pr.evaluate(pp.run(good)) == []


def test_gpu_pool_without_reservation_fires() -> None:
    got = messages(pr.evaluate(pp.run(pp.bad_gpu)), "gpu-pool-consumes-reservation")
    assert got == [  # in the recording's order: by type, then name
        "launch template cb-lt-untargeted: market type capacity-block without "
        "capacityReservationSpecification.capacityReservationTarget: name the Capacity Block (cr-...)",
        "EKS node group cb-group-no-lt: capacityType CAPACITY_BLOCK needs a launch template that targets the "
        "Capacity Block (launchTemplate with capacityReservationSpecification)",
        "AKS agent pool gb300-no-crg: Standard_ND128isr_GB300_v6 is quota-gated (standardNDISRGB300V6Family); set "
        "capacityReservationGroupID to the capacity reservation group that holds its reservation",
        "GKE node pool a4x-no-res: a4x-maxgpu-4g-metal is sold only through reservations; set "
        "nodeConfig.reservationAffinity to consumeReservationType SPECIFIC_RESERVATION with the reservation path "
        "in values (given: no reservation affinity)",
    ]


def test_gpu_rule_takes_extra_skus_from_its_config() -> None:
    def program() -> None:
        pp.aws.ec2.LaunchTemplate("od", instance_type="p6-b300.48xlarge")

    res = pp.run(program)
    assert pr.evaluate(res) == []
    got = pr.evaluate(res, {"gpu-pool-consumes-reservation": {"extraSkus": ["p6-b300.48xlarge"]}})
    assert [v.message for v in got] == [
        "launch template od: p6-b300.48xlarge is listed in this policy's extraSkus; target the reservation with "
        "capacityReservationSpecification.capacityReservationTarget"]


def test_rack_size_fires() -> None:
    got = messages(pr.evaluate(pp.run(pp.bad_rack)), "nvl72-pool-within-rack")
    assert got == [
        "AKS agent pool gb300-big: count 19 exceeds one 72-GPU NVLink rack of Standard_ND128isr_GB300_v6 "
        "(18 nodes); use one pool per rack",
        "GKE node pool a4x-autoscaled: autoscaling.maxNodeCount 36 exceeds one 72-GPU NVLink rack of "
        "a4x-maxgpu-4g-metal (18 nodes); use one pool per rack",
        "GKE node pool a4x-big: nodeCount 20 exceeds one 72-GPU NVLink rack of a4x-maxgpu-4g-metal (18 nodes); "
        "use one pool per rack",
        "GKE node pool a4x-unpinned: a4x-maxgpu-4g-metal spans nodes over NVLink only inside one rack; pin it to a "
        "reservation sub-block (…/reservationBlocks/B/reservationSubBlocks/S) or a COMPACT placement policy",
    ]


def test_public_or_unencrypted_buckets_fire() -> None:
    got = messages(pr.evaluate(pp.run(pp.bad_buckets)), "weight-bucket-private-encrypted")
    assert got == [
        'GCS bucket gcs-open: set publicAccessPrevention "enforced" (given: inherited)',
        "GCS bucket gcs-open: set uniformBucketLevelAccess true (no per-object ACLs)",
        "GCS bucket gcs-open: gcs-open-public grants roles/storage.objectViewer to allUsers",
        "S3 bucket s3-unblocked: add a BucketPublicAccessBlock with blockPublicAcls, blockPublicPolicy, "
        "ignorePublicAcls, restrictPublicBuckets all true",
        "storage account account-open: set allowBlobPublicAccess false",
        "blob container container-open: publicAccess Blob (must be None)",
        "OSS bucket oss-plain: OSS does not encrypt by default; set serverSideEncryptionRule (sseAlgorithm AES256 "
        "or KMS) or add a BucketServerSideEncryption",
    ]


def test_public_endpoints_fire() -> None:
    got = messages(pr.evaluate(pp.run(pp.bad_endpoints)), "public-endpoint-restricted")
    assert got == [
        "Service everyone allows 0.0.0.0/0: list specific CIDRs",
        "Service no-auth is public but the server behind it takes no API key (--api-key or VLLM_API_KEY from a "
        "Secret)",
        "Service no-ranges is a public LoadBalancer without spec.loadBalancerSourceRanges: list the CIDRs "
        "allowed to call it (or make it internal)",
        "Service nothing-behind is public and selects no workload of this stack: its pods' authentication cannot "
        "be verified",
    ]


def test_short_startup_budget_fires() -> None:
    got = messages(pr.evaluate(pp.run(pp.bad_startup)), "startup-budget-covers-load")
    fuse = LOADER_PROFILES[Loader.FUSE].source
    assert got == [
        "Deployment liveness-only, container engine: the liveness probe (there is no startup probe) gives up after "
        "900 s, but loading Kimi K3 (fuse, 1 node(s), 1 of the checkpoint from the bucket per node) is estimated at "
        "312 s plus 600 s warm-up = 912 s at the "
        f"fastest the loader is stated to go ({fuse}); it would be killed mid-load",
        "Deployment short-startup, container engine: the startup probe gives up after 600 s, but loading Kimi K3 "
        f"(fuse, 1 node(s), 1 of the checkpoint from the bucket per node) is estimated at 312 s plus 600 s warm-up = "
        f"912 s at the fastest the loader is stated "
        f"to go ({fuse}); it would be killed mid-load",
    ]


def test_managed_serving_deadlines_fire() -> None:
    got = messages(pr.evaluate(pp.run(pp.bad_managed_serving)), "startup-budget-covers-load")
    copy = LOADER_PROFILES[Loader.BUCKET_COPY].source
    fuse = LOADER_PROFILES[Loader.FUSE].source
    assert got == [
        "PAI-EAS service eas: the health_check (there is no startup_check) gives up after 300 s, but loading Kimi "
        f"K3 (fuse, 3 node(s), 1 of the checkpoint from the bucket per node) is estimated at 312 s plus 600 s warm-up "
        f"= 912 s at the fastest the loader is "
        f"stated to go ({fuse}); it would be killed mid-load",
        "InferenceEndpointConfig iec: the deployment deadline (maxDeployTimeInSeconds) gives up after 600 s, but "
        f"loading Kimi K3 (bucket-copy, 1 node(s)) is estimated at 507 s plus 600 s warm-up = 1,107 s at the "
        f"fastest the loader is stated to go ({copy}); it would be killed mid-load",
    ]


def test_an_endpoint_on_the_node_s_nvme_is_judged_with_its_fill_from_s3() -> None:
    got = messages(pr.evaluate(pp.run(pp.bad_nvme_endpoint)), "startup-budget-covers-load")
    copy = LOADER_PROFILES[Loader.BUCKET_COPY].source
    assert got == [
        "InferenceEndpointConfig iec-nvme: the deployment deadline (maxDeployTimeInSeconds) gives up after 600 s, but "
        f"loading Kimi K3 (bucket-copy, 1 node(s)) is estimated at 507 s plus 600 s warm-up = 1,107 s at the "
        f"fastest the loader is stated to go ({copy}); it would be killed mid-load",
    ]


def test_lws_workers_and_public_gateways_fire() -> None:
    violations = pr.evaluate(pp.run(pp.bad_lws_and_gateway))
    fuse = LOADER_PROFILES[Loader.FUSE].source
    assert [(v.policy, v.message) for v in violations] == [
        ("public-endpoint-restricted", "Gateway public-gw uses the public class gke-l7-global-external-managed, "
         "and a Gateway cannot restrict its clients' CIDRs: use the internal class, or restrict it with a cloud "
         "policy and list it in this policy's allowedGateways"),
        ("startup-budget-covers-load", "LeaderWorkerSet lws-short-worker (worker), container engine: the liveness "
         "probe (there is no startup probe) gives up after 300 s, but loading Kimi K3 (fuse, 2 node(s), 1 of the "
         "checkpoint from the bucket per node) is estimated at 312 s plus 600 s warm-up = 912 s at the fastest the "
         f"loader is stated to go ({fuse}); it "
         "would be killed mid-load"),
    ]
    allowed = pr.evaluate(pp.run(pp.bad_lws_and_gateway), {"public-endpoint-restricted": {"allowedGateways": ["public-gw"]}})
    assert [v.policy for v in allowed] == ["startup-budget-covers-load"]


def test_the_serving_shapes_pass_every_policy() -> None:
    """serve() for each seed shape (public p6-b300 endpoint, LWS on GB300, SGLang StatefulSet with DSPARK, A4X
    Max behind the Inference Gateway) keeps every rule, and the rules did look at the servers."""
    from tests.serving.shapes import SHAPES, record_shape

    for name in SHAPES:
        res = pp.resources(record_shape(name).recording)
        assert pr.evaluate(res) == [], name
        servers = [s for r in res for s in pr.servers_of(pr.pod_templates(r)).values()]
        assert servers, name


def test_capacity_purchases_are_flagged() -> None:
    violations = pr.evaluate(pp.run(pp.bad_purchases))
    assert [(v.policy, v.message) for v in violations] == [
        ("capacity-purchase-flagged", "block purchases an EC2 Capacity Block (offering cb-0123456789abcdef0): paid "
         "up front, non-refundable, and `pulumi destroy` does not cancel it"),
        ("capacity-purchase-flagged", "reservation creates an Azure capacity reservation (2 x "
         "Standard_ND128isr_GB300_v6): billed from creation whether used or not"),
    ]
    rule = next(r for r in pr.RULES if r.name == "capacity-purchase-flagged")
    assert rule.enforcement == pr.Enforcement.ADVISORY


def test_each_rule_fires_on_its_bad_example_and_only_there() -> None:
    bad = {"gpu-pool-consumes-reservation": pp.bad_gpu, "weight-bucket-private-encrypted": pp.bad_buckets,
           "public-endpoint-restricted": pp.bad_endpoints, "startup-budget-covers-load": pp.bad_startup,
           "startup-budget-covers-load (managed serving)": pp.bad_managed_serving,
           "nvl72-pool-within-rack": pp.bad_rack, "capacity-purchase-flagged": pp.bad_purchases,
           "least-privilege-iam": pp.bad_iam, "role-permissions-before-use": pp.role_permissions}
    assert sorted({n.split(" ")[0] for n in bad}) == sorted(RULE_NAMES)
    for name, program in bad.items():
        fired = {v.policy for v in pr.evaluate(pp.run(program))}
        assert name.split(" ")[0] in fired, name


# --- the pack --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pack() -> dict:
    """policies/__main__.py, imported without starting the gRPC server (PolicyPack blocks forever)."""
    return runpy.run_path(str(ROOT / "policies" / "__main__.py"), run_name="k3infra_policy_pack")


def test_pack_layout(pack: dict) -> None:
    manifest = (ROOT / "policies" / "PulumiPolicy.yaml").read_text()
    assert "name: python" in manifest and "virtualenv: venv" in manifest
    policies = pack["policies"]()
    assert [p.name for p in policies] == RULE_NAMES
    assert all(isinstance(p, StackValidationPolicy) for p in policies)
    levels = {p.name: p.enforcement_level for p in policies}
    assert levels["capacity-purchase-flagged"] == EnforcementLevel.ADVISORY
    assert {lvl for n, lvl in levels.items() if n != "capacity-purchase-flagged"} == {EnforcementLevel.MANDATORY}
    gpu = next(p for p in policies if p.name == "gpu-pool-consumes-reservation")
    assert gpu.config_schema is not None and "extraSkus" in gpu.config_schema.properties


def _policy_resource(r: pr.Resource, props: dict) -> PolicyResource:
    opts = PolicyResourceOptions(protect=False, ignore_changes=[], delete_before_replace=None, aliases=[],
                                 custom_timeouts=None, additional_secret_outputs=[])  # type: ignore[arg-type]
    return PolicyResource(r.type, proxy.unknown_checking_proxy(props), r.urn, r.name, opts, None, None, [], {})


def test_pack_reports_through_pulumi_policy(pack: dict) -> None:
    """The adapter: pulumi-policy's proxied props (with a value unknown during preview) reach the rules as
    plain values, and violations are reported with the resource URN."""
    res = pp.run(pp.bad_gpu)
    by_name = {r.name: r for r in res}
    a4x = by_name["a4x-no-res"]
    aks = by_name["gb300-no-crg"]
    aks_props = {**aks.props, "capacityReservationGroupID": proxy.UNKNOWN_STRING_VALUE}  # known after apply
    args = StackValidationArgs([_policy_resource(a4x, dict(a4x.props)), _policy_resource(aks, aks_props)], {})
    reported: list[tuple[str, str | None]] = []
    policy = next(p for p in pack["policies"]() if p.name == "gpu-pool-consumes-reservation")
    policy.validate(args, lambda message, urn=None: reported.append((message, urn)))
    assert [urn for _, urn in reported] == [a4x.urn]
    assert reported[0][0].startswith("GKE node pool a4x-no-res: a4x-maxgpu-4g-metal is sold only through reservations")


def test_requirements_pin_the_installed_pulumi_policy() -> None:
    import importlib.metadata

    pins = [line for line in (ROOT / "policies" / "requirements.txt").read_text().splitlines()
            if line and not line.startswith("#")]
    assert pins == [f"pulumi-policy=={importlib.metadata.version('pulumi-policy')}"]


# --- regressions in the real stacks ---------------------------------------------------------------------------


def _drop_reservation(r: dict) -> str | None:
    if r["type"] == "gcp:container/nodePool:NodePool" and "reservationAffinity" in r["props"].get("nodeConfig", {}):
        del r["props"]["nodeConfig"]["reservationAffinity"]
    elif r["type"] == "azure-native:containerservice:AgentPool" and "capacityReservationGroupID" in r["props"]:
        del r["props"]["capacityReservationGroupID"]
    elif r["type"] == "aws:ec2/launchTemplate:LaunchTemplate" and "capacityReservationSpecification" in r["props"]:
        del r["props"]["capacityReservationSpecification"]
    else:
        return None
    return "gpu-pool-consumes-reservation"


def _open_bucket(r: dict) -> str | None:
    changes = {"gcp:storage/bucket:Bucket": ("publicAccessPrevention", "inherited"),
               "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": ("blockPublicPolicy", False),
               "azure-native:storage:StorageAccount": ("allowBlobPublicAccess", True),
               "alicloud:oss/bucket:Bucket": ("acl", "public-read")}
    if r["type"] not in changes:
        return None
    key, value = changes[r["type"]]
    r["props"][key] = value
    return "weight-bucket-private-encrypted"


def _shorten_startup(r: dict) -> str | None:
    found = False
    for t in pr.pod_templates(pr.Resource(**r)):
        for c in t.spec.get("containers", []):
            if c.get("startupProbe"):
                c["startupProbe"]["failureThreshold"] = 1
                found = True
    return "startup-budget-covers-load" if found and pr.servers_of(pr.pod_templates(pr.Resource(**r))) else None


@pytest.mark.parametrize("stack", STACKS)
def test_the_rules_catch_a_regression_in_each_stack(stack: str) -> None:
    """The rules really inspect each stack: dropping its pool's reservation, opening its bucket or shortening
    its server's start-up probe makes the matching rule fire (on main before a cloud lands, the stack has no
    resources and there is nothing to break)."""
    base = pp.resources(plan(stack).recording)
    if not base:
        return
    applied: list[str] = []
    for mutate in (_drop_reservation, _open_bucket, _shorten_startup):
        resources = [dict(type=r.type, name=r.name, urn=r.urn, props=json.loads(json.dumps(r.props)),
                          dependencies=r.dependencies) for r in base]
        expected = {rule for r in resources if (rule := mutate(r))}
        if not expected:
            continue
        fired = {v.policy for v in pr.evaluate([pr.Resource(**r) for r in resources])}
        assert expected <= fired, (stack, mutate.__name__, fired)
        applied.append(mutate.__name__)
    # An existing cluster's store is the user's: k3infra creates no bucket there to open.
    assert "_open_bucket" in applied or plan(stack).config.cloud == "kubernetes", f"{stack}: no weight bucket found"


def test_least_privilege_fires_on_broad_grants_only() -> None:
    got = messages(pr.evaluate(pp.run(pp.bad_iam)), "least-privilege-iam")
    assert sorted(got) == sorted([
        "wide allows every action of a service (s3:*): name the actions it needs",
        "wide allows s3:PutObject on every resource: scope object writes to the weight bucket",
        "admin attaches arn:aws:iam::aws:policy/AdministratorAccess, which grants a whole service: attach a policy "
        "scoped to the task",
        "public-read grants roles/storage.objectViewer to allUsers: that is anyone",
        "editor grants roles/editor: grant a predefined role scoped to the task",
        "owner assigns Owner: assign a role scoped to the task",
        "contributor-everywhere assigns Contributor on a whole subscription: scope it to a resource group",
        "oss-all allows every action of a service (oss:*): name the actions it needs",
    ])


def test_a_role_user_that_does_not_wait_for_the_roles_policies_fires() -> None:
    """Only the node group that takes the role's ARN without its attachment; the add-on waits for its inline policy
    and the access entry only names the role."""
    got = messages(pr.evaluate(pp.run(pp.role_permissions)), "role-permissions-before-use")
    assert got == ["early (aws:eks/nodeGroup:NodeGroup) uses IAM role node but does not depend on its node-worker: it "
                   "may be created before them (or they deleted first); depend on every policy of the role"]


def test_the_startup_rule_reads_how_the_nodes_split_the_load() -> None:
    """The rule's estimate takes a node's part of the checkpoint from the rendered command (catalog.distribution): the
    RunAI streamer splits one copy among one node's ranks unless RUNAI_STREAMER_DIST_GLOBAL=1, and through gcsfuse's
    file cache (on: max-size-mb not 0) every node fetches every file, whose header each rank reads first."""
    from fractions import Fraction

    script = ("vllm serve /mnt/models --load-format runai_streamer --tensor-parallel-size 8 "
              "--model-loader-extra-config '{\"concurrency\":16,\"distributed\":true}'")
    gcsfuse = [{"name": "weights", "csi": {"driver": "gcsfuse.csi.storage.gke.io", "volumeAttributes": {
        "mountOptions": "implicit-dirs,file-cache:cache-file-for-range-read:true,file-cache:max-size-mb:-1"}}}]
    no_cache = [{"name": "weights", "csi": {"driver": "gcsfuse.csi.storage.gke.io", "volumeAttributes": {
        "mountOptions": "implicit-dirs,file-cache:max-size-mb:0"}}}]

    def share(env: dict[str, str], volumes: list[dict[str, object]], args: str = script) -> Fraction:
        container = {"args": [args], "env": [{"name": k, "value": v} for k, v in env.items()],
                     "volumeMounts": [{"name": "weights", "mountPath": "/mnt/models"}]}
        return startup.node_share(container, volumes, 2)

    assert share({}, []) == 1  # local mode: each node's ranks read the whole checkpoint
    assert share({"RUNAI_STREAMER_DIST_GLOBAL": "1"}, []) == Fraction(1, 2)
    assert share({"RUNAI_STREAMER_DIST_GLOBAL": "1"}, gcsfuse) == 1  # tensor ranges touch every file
    # every rank reads every file's header first: the cache downloads each object whole on that first read
    assert share({"RUNAI_STREAMER_DIST_GLOBAL": "1", "RUNAI_STREAMER_PARTITION_POLICY": "files"}, gcsfuse) == 1
    assert share({"RUNAI_STREAMER_DIST_GLOBAL": "1"}, no_cache) == Fraction(1, 2)
    assert share({}, [], script.replace(",\"distributed\":true", "")) == 4  # each of a node's 4 ranks reads it all
    assert share({}, gcsfuse, script.replace("runai_streamer", "fastsafetensors")) == Fraction(1, 2)
