"""The recording engine: what it records, secrets, computed outputs, determinism, and stack-file reading."""

import textwrap

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import pytest

from k3infra import offline
from k3infra.offline import Secret
from k3infra.stack_files import StackFileError, read_stack_file
from tests.support import ROOT, inventory, record


class Thing(pulumi.ComponentResource):
    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("k3infra:index:Thing", name, None, opts)
        project = gcp.organizations.get_project_output(project_id="p")
        bucket = gcp.storage.Bucket(f"{name}-bucket", name="weights", location="US",
                                    opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True, protect=True))
        gcp.storage.BucketIAMMember(
            f"{name}-reader", bucket=bucket.name, role="roles/storage.objectViewer",
            member=project.number.apply(lambda n: f"principal://iam.googleapis.com/projects/{n}/x"),
            opts=pulumi.ResourceOptions(parent=self))
        provider = k8s.Provider(f"{name}-k8s", kubeconfig=pulumi.Output.secret("kubeconfig-text"),
                                opts=pulumi.ResourceOptions(parent=self))
        k8s.core.v1.Secret(
            f"{name}-token", metadata=k8s.meta.v1.ObjectMetaArgs(name="hf", namespace="ns"),
            string_data={"HF_TOKEN": pulumi.Output.secret("hf_secret_value")},
            opts=pulumi.ResourceOptions(parent=self, provider=provider, ignore_changes=["data"],
                                        custom_timeouts=pulumi.CustomTimeouts(create="45m"), depends_on=[bucket]))
        self.register_outputs({})


def program() -> None:
    Thing("t")
    pulumi.export("token", pulumi.Output.secret("zzz"))
    pulumi.export("count", 3)


@pytest.fixture(scope="module")
def rec():
    return record(program)


def test_inventory_with_parents(rec):
    assert inventory(rec) == [
        ("k3infra:index:Thing", "t", None),
        ("gcp:storage/bucket:Bucket", "t-bucket", "k3infra:index:Thing"),
        ("gcp:storage/bucketIAMMember:BucketIAMMember", "t-reader", "k3infra:index:Thing"),
        ("kubernetes:core/v1:Secret", "t-token", "k3infra:index:Thing"),
        ("pulumi:providers:kubernetes", "t-k8s", "k3infra:index:Thing"),
    ]


def test_options_are_recorded(rec):
    bucket = rec.one("gcp:storage/bucket:Bucket")
    assert (bucket.protect, bucket.retain_on_delete, bucket.custom) == (True, True, True)
    token = rec.one("kubernetes:core/v1:Secret")
    assert token.provider == rec.one("pulumi:providers:kubernetes").urn
    assert token.custom_timeouts == {"create": "45m"}
    assert token.ignore_changes == ("data",)
    assert bucket.urn in token.dependencies
    assert rec.one("k3infra:index:Thing").custom is False


def test_computed_outputs_flow_into_downstream_inputs(rec):
    # The project number comes from the mocked getProject; without it the member would be silently dropped.
    member = rec.one("gcp:storage/bucketIAMMember:BucketIAMMember").inputs["member"]
    assert member == "principal://iam.googleapis.com/projects/123456789012/x"
    assert [i.token for i in rec.invocations] == ["gcp:organizations/getProject:getProject"]


def test_secrets_are_marked_and_masked(rec):
    token = rec.one("kubernetes:core/v1:Secret")
    assert token.inputs["stringData"] == Secret({"HF_TOKEN": "hf_secret_value"})
    assert token.to_json()["inputs"]["stringData"] == "[secret]"
    provider = rec.one("pulumi:providers:kubernetes")
    assert offline.plain(provider.inputs)["kubeconfig"] == "[secret]"
    assert rec.outputs == {"count": 3, "token": Secret("zzz")}
    assert offline.unwrap(rec.outputs["token"]) == "zzz"


def test_plan_json_of_a_resource(rec):
    bucket = rec.one("gcp:storage/bucket:Bucket").to_json()
    assert bucket == {
        "urn": "urn:pulumi:test::k3infra::k3infra:index:Thing$gcp:storage/bucket:Bucket::t-bucket",
        "type": "gcp:storage/bucket:Bucket",
        "name": "t-bucket",
        "parent": "urn:pulumi:test::k3infra::k3infra:index:Thing::t",
        "dependsOn": [],
        "provider": None,
        "protect": True,
        "custom": True,
        "inputs": {"location": "US", "name": "weights"},
        "options": {"retainOnDelete": True},
    }


def test_urns_are_the_engines():
    """URNs as the real engine's generateURN makes them (pkg/resource/deploy/deployment.go): no root stack type
    on a top-level resource, and a grandchild's type prefixed with its parent's whole qualified type (the SDK
    mock keeps ``pulumi:pulumi:Stack$`` and only the parent's last type)."""

    def nested() -> None:
        outer = pulumi.ComponentResource("k3infra:index:Outer", "o")
        inner = pulumi.ComponentResource("k3infra:index:Inner", "i", opts=pulumi.ResourceOptions(parent=outer))
        k8s.core.v1.ConfigMap("cm", data={"a": "b"}, opts=pulumi.ResourceOptions(parent=inner))

    r = record(nested, stack="urns")
    assert [(x.urn, x.parent) for x in r.ordered()] == [
        ("urn:pulumi:urns::k3infra::k3infra:index:Outer::o", None),
        ("urn:pulumi:urns::k3infra::k3infra:index:Outer$k3infra:index:Inner::i",
         "urn:pulumi:urns::k3infra::k3infra:index:Outer::o"),
        ("urn:pulumi:urns::k3infra::k3infra:index:Outer$k3infra:index:Inner$kubernetes:core/v1:ConfigMap::cm",
         "urn:pulumi:urns::k3infra::k3infra:index:Outer$k3infra:index:Inner::i"),
    ]
    assert r.one("kubernetes:core/v1:ConfigMap").parent_type == "k3infra:index:Inner"


def test_two_runs_are_identical():
    a, b = record(program), record(program)
    assert [r.to_json() for r in a.ordered()] == [r.to_json() for r in b.ordered()]


def test_runs_are_isolated_and_config_is_passed_as_the_engine_passes_it():
    seen = {}

    def prog():
        cfg = pulumi.Config("k3infra")
        seen["nodes"] = cfg.get("nodes")
        seen["capacity"] = cfg.get_object("capacity")
        seen["secret"] = cfg.get("hfToken")

    offline.run(prog, project="k3infra", stack="a",
                config={"k3infra:nodes": 2, "k3infra:capacity": {"type": "x"}, "k3infra:hfToken": Secret("s")})
    assert seen == {"nodes": "2", "capacity": {"type": "x"}, "secret": "s"}
    offline.run(prog, project="k3infra", stack="b", config={})
    assert seen == {"nodes": None, "capacity": None, "secret": None}


def test_program_exceptions_propagate():
    def prog():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        offline.run(prog, project="k3infra", stack="x")


def write(tmp_path, text, name="Pulumi.dev.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_stack_file_merges_project_defaults_and_marks_secure_values(tmp_path):
    sf = read_stack_file(write(tmp_path, """
        config:
          k3infra:cloud: gcp
          k3infra:replicas: 2
          k3infra:hfToken:
            secure: AAABAKx
        environment:
          - my-org/credentials
    """), ROOT)
    assert sf.stack == "dev" and sf.project == "k3infra"
    assert sf.config["k3infra:cloud"] == "gcp"
    assert sf.config["k3infra:replicas"] == 2  # the stack overrides Pulumi.yaml's default 1
    assert sf.config["k3infra:engine"] == "vllm"  # Pulumi.yaml's default
    assert isinstance(sf.config["k3infra:hfToken"], Secret)
    assert sf.secret_keys == ("k3infra:hfToken",)
    assert sf.notes == ("k3infra:hfToken is encrypted in the stack file; the offline plan uses a placeholder secret",
                        "the stack imports Pulumi ESC environments, which the offline plan does not resolve")


@pytest.mark.parametrize(
    "text, message",
    [
        ("- a\n- b\n", "a stack file is a YAML mapping with a config: key, not a list"),
        ("config: [1, 2]\n", "config: must be a mapping of namespace:key to value"),
        ("config:\n  nodes: 2\n", "configuration key 'nodes' must be namespaced, e.g. k3infra:nodes"),
        ("config: {a: [}\n", "not valid YAML"),
    ],
)
def test_unreadable_stack_files(tmp_path, text, message):
    with pytest.raises(StackFileError, match=message.replace("[", r"\[")):
        read_stack_file(write(tmp_path, text), ROOT)


def test_missing_and_empty_stack_files(tmp_path):
    with pytest.raises(StackFileError, match="no such stack file"):
        read_stack_file(tmp_path / "Pulumi.none.yaml", ROOT)
    empty = read_stack_file(write(tmp_path, ""), ROOT)
    assert "k3infra:cloud" not in empty.config


def test_stack_yaml_is_read_with_the_yaml_1_2_core_schema_as_pulumi_reads_it():
    """go-yaml v3 (the Pulumi CLI) follows YAML 1.2: a time, a yes/no word and a date stay the text written;
    PyYAML's YAML 1.1 would turn ``22:30`` into 1350 and ``on`` into True."""
    from k3infra.stack_files import load_yaml

    assert load_yaml("a: 22:30\nb: yes\nc: on\nd: 2026-01-01\ne: 1.33\nf: true\ng: 8\nh: 0x1F\ni: ~\n") == {
        "a": "22:30", "b": "yes", "c": "on", "d": "2026-01-01", "e": 1.33, "f": True, "g": 8, "h": 31, "i": None}
