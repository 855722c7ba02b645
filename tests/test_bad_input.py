"""Bad input never reaches a cloud: invalid stacks across all four clouds exit 2, list every problem once with
its key, print no traceback and register no resource."""

import textwrap

import pytest
from typer.testing import CliRunner

from k3infra import cli, offline, planning, program
from k3infra.config import ConfigError
from tests.support import ROOT

runner = CliRunner()

# (case id, stack, --set overrides, the keys the problems must name: each exactly once)
CASES: list[tuple[str, str, tuple[str, ...], list[str]]] = [
    # Google Cloud: A4X Max
    ("gcp-nodes-not-a-number", "gcp-a4xmax", ("nodes=two",), ["k3infra:nodes"]),
    ("gcp-nodes-zero", "gcp-a4xmax", ("nodes=0",), ["k3infra:nodes"]),
    ("gcp-nodes-too-few", "gcp-a4xmax", ("nodes=1",), ["k3infra:nodes"]),
    ("gcp-nodes-more-than-a-rack", "gcp-a4xmax", ("nodes=19",), ["k3infra:nodes"]),
    ("gcp-replicas-more-than-a-rack", "gcp-a4xmax", ("replicas=10",), ["k3infra:replicas"]),
    ("gcp-tp-does-not-divide", "gcp-a4xmax", ("tensorParallel=3",), ["k3infra:tensorParallel"]),
    ("gcp-pp-does-not-divide", "gcp-a4xmax", ("pipelineParallel=3",), ["k3infra:pipelineParallel"]),
    ("gcp-sub-block-missing", "gcp-a4xmax", ("capacity.block=null", "capacity.subBlock=null"),
     ["k3infra:capacity.block", "k3infra:capacity.subBlock"]),
    ("gcp-a4xmax-on-demand", "gcp-a4xmax", ("capacity={type: on-demand}",), ["k3infra:capacity.type"]),
    ("gcp-capacity-type-unknown", "gcp-a4xmax", ("capacity.type=spot",), ["k3infra:capacity.type"]),
    ("gcp-zone-outside-region", "gcp-a4xmax", ("zone=europe-west4-a",), ["k3infra:zone"]),
    ("gcp-x86-image-on-grace", "gcp-a4xmax", ("image=null", "imagePlatforms=null"), ["k3infra:image"]),
    ("gcp-unknown-image-platforms", "gcp-a4xmax", ("imagePlatforms=null",), ["k3infra:imagePlatforms"]),
    ("gcp-image-platform-typo", "gcp-a4xmax", ("imagePlatforms=[aarch64]",), ["k3infra:imagePlatforms[0]"]),
    ("gcp-mxfp4-load-format", "gcp-a4xmax", ("loadFormat=MXFP4",), ["k3infra:loadFormat"]),
    ("gcp-bucket-uppercase", "gcp-a4xmax", ("weights.bucket=Kimi_K3",), ["k3infra:weights.bucket"]),
    ("gcp-bucket-google", "gcp-a4xmax", ("weights.bucket=google-k3",), ["k3infra:weights.bucket"]),
    ("gcp-unknown-key", "gcp-a4xmax", ("accelerater=a4x-maxgpu-4g-metal",), ["k3infra:accelerater"]),
    ("gcp-unknown-nested-key", "gcp-a4xmax", ("weights.retainOnDestory=false",), ["k3infra:weights.retainOnDestory"]),
    ("gcp-project-missing", "gcp-a4xmax", ("gcp:project=null",), ["gcp:project"]),
    ("gcp-azure-settings", "gcp-a4xmax", ("azure={quotaVcpus: 8}",), ["k3infra:azure"]),
    ("gcp-public-without-cidrs-or-key", "gcp-a4xmax", ("endpoint.exposure=public",),
     ["k3infra:apiKey", "k3infra:endpoint.allowedCidrs"]),
    ("gcp-cidr-malformed", "gcp-a4xmax", ("endpoint={exposure: public, allowedCidrs: [10.0.0.0/33]}", "apiKey=k"),
     ["k3infra:endpoint.allowedCidrs[0]"]),
    ("gcp-memory-fraction-range", "gcp-a4xmax", ("memoryFraction=1.5",), ["k3infra:memoryFraction"]),
    ("ack-dspark-with-pipeline-parallel", "alicloud-ack", ("speculativeDecoding=dspark",),
     ["k3infra:speculativeDecoding"]),
    ("gcp-deployment-across-nodes", "gcp-a4xmax", ("workload=deployment",), ["k3infra:workload"]),
    ("gcp-streamer-fastsafetensors", "gcp-a4xmax", ("weights.loader=streamer", "loadFormat=fastsafetensors"),
     ["k3infra:loadFormat"]),
    ("gcp-release-channel", "gcp-a4xmax", ("gcp.releaseChannel=NIGHTLY",), ["k3infra:gcp.releaseChannel"]),
    ("gcp-namespace-not-dns", "gcp-a4xmax", ("namespace=Kimi_K3",), ["k3infra:namespace"]),
    ("gcp-accelerator-of-aws", "gcp-a4xmax", ("accelerator=p6-b300.48xlarge",), ["k3infra:accelerator"]),
    ("gcp-engine-unknown", "gcp-a4xmax", ("engine=tgi",), ["k3infra:engine"]),
    ("gcp-a4-sub-block-without-block", "gcp-a4-sglang", ("capacity.subBlock=sb-1",), ["k3infra:capacity.block"]),
    ("gcp-a4-sglang-on-vllm-image", "gcp-a4-sglang", ("image=vllm/vllm-openai:kimi-k3",), ["k3infra:image"]),
    ("gcp-a4-sglang-draft-unpinned", "gcp-a4-sglang", ("weights.draftRevision=null",), ["k3infra:weights.draftRevision"]),
    # AWS: EKS on a Capacity Block
    ("aws-block-id-missing", "aws-eks", ("capacity.reservationId=null",), ["k3infra:capacity.reservationId"]),
    ("aws-block-id-malformed", "aws-eks", ("capacity.reservationId=cr-123",), ["k3infra:capacity.reservationId"]),
    ("aws-purchase-without-window", "aws-eks", ("capacity={type: capacity-block, purchase: true}",),
     ["k3infra:capacity.durationHours", "k3infra:capacity.endBefore", "k3infra:capacity.startAfter"]),
    ("aws-purchase-and-id", "aws-eks", ("capacity.purchase=true", "capacity.durationHours=24",
                                        "capacity.startAfter=2026-12-01", "capacity.endBefore=2026-12-08"),
     ["k3infra:capacity.reservationId"]),
    ("aws-window-backwards", "aws-eks", ("capacity={type: capacity-block, purchase: true, durationHours: 24, "
                                         "startAfter: 2026-12-08, endBefore: 2026-12-01}",),
     ["k3infra:capacity.endBefore"]),
    ("aws-duration-too-short", "aws-eks", ("capacity={type: capacity-block, purchase: true, durationHours: 1, "
                                           "startAfter: 2026-12-01, endBefore: 2026-12-08}",),
     ["k3infra:capacity.durationHours"]),
    ("aws-bucket-double-dot", "aws-eks", ("weights.bucket=k3..weights",), ["k3infra:weights.bucket"]),
    ("aws-bucket-ip", "aws-eks", ("weights.bucket=192.168.1.1",), ["k3infra:weights.bucket"]),
    ("aws-zone-other-region", "aws-eks", ("zone=us-east-1a",), ["k3infra:zone"]),
    ("aws-platform-of-gcp", "aws-eks", ("platform=gke",), ["k3infra:platform"]),
    ("aws-sagemaker-type-on-eks", "aws-eks", ("accelerator=ml.p6-b300.48xlarge",), ["k3infra:accelerator"]),
    ("aws-region-missing", "aws-eks", ("aws:region=null",), ["aws:region"]),
    ("aws-reservation-field-on-block", "aws-eks", ("capacity.subBlock=x",), ["k3infra:capacity.subBlock"]),
    ("aws-revision-missing", "aws-eks", ("weights.revision=null",), ["k3infra:weights.revision"]),
    ("aws-azure-account", "aws-eks", ("weights.account=k3",), ["k3infra:weights.account"]),
    # AWS: HyperPod
    ("hyperpod-two-nodes", "aws-hyperpod", ("nodes=2",), ["k3infra:nodes"]),
    ("hyperpod-arn-malformed", "aws-hyperpod", ("capacity.trainingPlanArn=arn:aws:sagemaker:us-west-2:1:tp/x",),
     ["k3infra:capacity.trainingPlanArn"]),
    ("hyperpod-arn-other-region", "aws-hyperpod",
     ("capacity.trainingPlanArn=arn:aws:sagemaker:eu-west-1:123456789012:training-plan/k3",),
     ["k3infra:capacity.trainingPlanArn"]),
    ("hyperpod-fuse-loader", "aws-hyperpod", ("weights.loader=fuse",), ["k3infra:weights.loader"]),
    ("hyperpod-workload", "aws-hyperpod", ("workload=leaderworkerset",), ["k3infra:workload"]),
    ("hyperpod-ec2-type", "aws-hyperpod", ("accelerator=p6-b300.48xlarge",), ["k3infra:accelerator"]),
    # Azure
    ("azure-zone-4", "azure-gb300", ("zone='4'",), ["k3infra:zone"]),
    ("azure-account-missing", "azure-gb300", ("weights.account=null",), ["k3infra:weights.account"]),
    ("azure-account-uppercase", "azure-gb300", ("weights.account=K3-Weights",), ["k3infra:weights.account"]),
    ("azure-container-double-hyphen", "azure-gb300", ("weights.bucket=kimi--k3",), ["k3infra:weights.bucket"]),
    ("azure-group-neither", "azure-gb300", ("capacity.groupId=null",), ["k3infra:capacity.groupId"]),
    ("azure-group-malformed", "azure-gb300", ("capacity.groupId=crg-k3",), ["k3infra:capacity.groupId"]),
    ("azure-x86-image", "azure-gb300", ("image=null", "imagePlatforms=null"), ["k3infra:image"]),
    ("azure-quota-negative", "azure-gb300", ("azure.quotaVcpus=-1",), ["k3infra:azure.quotaVcpus"]),
    ("azure-location-missing", "azure-gb300", ("azure-native:location=null",), ["azure-native:location"]),
    # Alibaba Cloud
    ("alicloud-two-nodes-of-96gb", "alicloud-ack", ("nodes=2",), ["k3infra:nodes"]),
    ("alicloud-streamer", "alicloud-ack", ("weights.loader=streamer",), ["k3infra:weights.loader"]),
    ("alicloud-pool-missing", "alicloud-ack", ("capacity.privatePoolId=null",), ["k3infra:capacity.privatePoolId"]),
    ("alicloud-pool-malformed", "alicloud-ack", ("capacity.privatePoolId=pool-1",), ["k3infra:capacity.privatePoolId"]),
    ("alicloud-bucket-dot", "alicloud-ack", ("weights.bucket=kimi.k3",), ["k3infra:weights.bucket"]),
    ("alicloud-capacity-block", "alicloud-ack", ("capacity={type: capacity-block, reservationId: cr-0123456789abcdef0}",),
     ["k3infra:capacity.type"]),
    ("alicloud-zone-other-region", "alicloud-ack", ("zone=cn-hangzhou-h",), ["k3infra:zone"]),
    ("alicloud-pai-resource-group-malformed", "alicloud-pai", ("alicloud.paiResourceGroup=rg-1",),
     ["k3infra:alicloud.paiResourceGroup"]),
    ("alicloud-pai-gateway", "alicloud-pai", ("endpoint.gateway=true",), ["k3infra:endpoint.gateway"]),
]


def run(*args: str):
    return runner.invoke(cli.app, list(args), catch_exceptions=False)


def test_at_least_forty_cases_across_the_four_clouds():
    assert len(CASES) >= 40
    assert {stack.split("-")[0] for _, stack, _, _ in CASES} == {"gcp", "aws", "azure", "alicloud"}


@pytest.mark.parametrize("case, stack, sets, keys", CASES, ids=[c[0] for c in CASES])
def test_invalid_stack_exits_2_listing_each_problem_once(case, stack, sets, keys):
    args = ["plan", stack]
    for s in sets:
        args += ["--set", s]
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and r.stdout == ""
    lines = r.stderr.splitlines()
    assert lines[0].endswith(f"has {len(keys)} configuration problem{'s' if len(keys) > 1 else ''}:"), r.stderr
    named = [line[len("  - "):].split(": ", 1)[0] for line in lines[1:]]
    assert named == keys, r.stderr
    assert all("(given: " in line and "; allowed: " in line for line in lines[1:]), r.stderr


@pytest.mark.parametrize("case, stack, sets, keys", CASES, ids=[c[0] for c in CASES])
def test_invalid_stack_registers_no_resource(case, stack, sets, keys):
    """The program validates before it registers anything, even when run without the CLI's own check."""
    sf = planning.load(stack, sets, root=ROOT)
    registered: list[str] = []

    class Spy(offline.RecordingMonitor):
        def RegisterResource(self, request):  # noqa: N802
            registered.append(request.type)
            return super().RegisterResource(request)

    original = offline.RecordingMonitor
    offline.RecordingMonitor = Spy  # type: ignore[misc]
    try:
        with pytest.raises(ConfigError):
            offline.run(program.main, project="k3infra", stack=sf.stack, config=sf.config)
    finally:
        offline.RecordingMonitor = original  # type: ignore[misc]
    assert registered == ["pulumi:pulumi:Stack"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("- just\n- a list\n", "a stack file is a YAML mapping with a config: key, not a list"),
        ("config:\n  cloud: gcp\n", "configuration key 'cloud' must be namespaced, e.g. k3infra:cloud"),
        ("config: {k3infra:cloud: [}\n", "not valid YAML"),
        ("config: just text\n", "config: must be a mapping of namespace:key to value"),
    ],
    ids=["not-a-mapping", "not-namespaced", "not-yaml", "config-not-a-mapping"],
)
def test_unreadable_stack_files_exit_2(tmp_path, text, message):
    f = tmp_path / "Pulumi.bad.yaml"
    f.write_text(text)
    r = run("plan", str(f))
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert message in r.stderr


def test_an_empty_stack_file_names_the_required_keys(tmp_path):
    f = tmp_path / "Pulumi.empty.yaml"
    f.write_text("")
    r = run("plan", str(f))
    assert r.exit_code == 2
    named = [line[len("  - "):].split(": ", 1)[0] for line in r.stderr.splitlines()[1:]]
    assert named == ["k3infra:accelerator", "k3infra:capacity", "k3infra:cloud", "k3infra:weights", "k3infra:zone"]


def test_a_missing_stack_file_exits_2(tmp_path):
    r = run("plan", str(tmp_path / "Pulumi.none.yaml"))
    assert r.exit_code == 2 and r.stderr.startswith("error: ") and "no such stack file" in r.stderr


def test_a_yaml_scalar_where_a_mapping_belongs(tmp_path):
    text = (ROOT / "stacks" / "Pulumi.aws-eks.yaml").read_text()
    f = tmp_path / "Pulumi.x.yaml"
    f.write_text(text.replace("  k3infra:weights:\n", "  k3infra:weights: oops\n  k3infra:unused:\n"))
    r = run("plan", str(f))
    assert r.exit_code == 2
    assert "k3infra:weights: must be a mapping of keys" in r.stderr


def test_reordering_keys_changes_nothing(tmp_path):
    original = (ROOT / "stacks" / "Pulumi.gcp-a4xmax.yaml").read_text()
    import yaml

    data = yaml.safe_load(original)
    data["config"] = dict(reversed(list(data["config"].items())))
    for v in data["config"].values():
        if isinstance(v, dict):
            items = list(v.items())
            v.clear()
            v.update(reversed(items))
    f = tmp_path / "Pulumi.gcp-a4xmax.yaml"
    f.write_text(textwrap.dedent(yaml.safe_dump(data, sort_keys=False)))
    a = run("plan", "gcp-a4xmax", "--format", "json")
    b = run("plan", str(f), "--format", "json")
    assert a.exit_code == b.exit_code == 0
    assert a.stdout == b.stdout
