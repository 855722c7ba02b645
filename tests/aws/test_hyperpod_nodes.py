"""The preview-time read of a HyperPod cluster's instances (k3infra.aws.hyperpod_nodes): pages, a cluster that does not
exist yet, failures and missing credentials degrade to warnings, never a crash."""

from k3infra.aws import hyperpod_nodes as nodes

CREDS = {"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "x"}


class Client:
    """ListClusterNodes over two pages."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def list_cluster_nodes(self, **kwargs):
        self.calls.append(kwargs)
        if "NextToken" not in kwargs:
            return {"ClusterNodeSummaries": [{"InstanceStatus": {"Status": "DeepHealthCheckInProgress"}}], "NextToken": "t"}
        return {"ClusterNodeSummaries": [{"InstanceStatus": {"Status": "Running"}}]}


class NotFound(Exception):
    response = {"Error": {"Code": "ResourceNotFound", "Message": "Cluster k3 not found"}}


def test_every_page_of_instances_is_read():
    client = Client()
    check = nodes.lookup("k3", "us-west-2", offline=False, env=CREDS,
                         reader_factory=lambda region: nodes.SageMakerNodesReader(client))
    assert (check.exists, check.statuses, check.schedulable) == (True, ("DeepHealthCheckInProgress", "Running"), 1)
    assert client.calls == [{"ClusterName": "k3"}, {"ClusterName": "k3", "NextToken": "t"}]
    assert nodes.endpoint_waits(check, "k3") is None and nodes.not_schedulable_warning(check, "k3", 1) is None


def test_a_cluster_this_update_creates_holds_the_endpoint_back():
    class Reader:
        def statuses(self, cluster_name):
            raise NotFound()

    check = nodes.lookup("k3", "us-west-2", offline=False, env=CREDS, reader_factory=lambda region: Reader())
    assert check == nodes.NodesCheck(False)
    assert nodes.endpoint_waits(check, "k3") == (
        "HyperPod cluster k3 is created by this update, and its instances run deep health checks (up to ~3 h) before "
        "their nodes are Schedulable")


def test_no_lookup_offline_without_credentials_or_on_failure(tmp_path):
    class Broken:
        def statuses(self, cluster_name):
            raise RuntimeError("denied")

    offline = nodes.lookup("k3", "us-west-2", offline=True, env=CREDS)
    bare = nodes.lookup("k3", "us-west-2", offline=False, env={}, home=tmp_path)
    failed = nodes.lookup("k3", "us-west-2", offline=False, env=CREDS, reader_factory=lambda region: Broken())
    for check, why in ((offline, "offline plan: no AWS lookup"), (bare, "no AWS credentials in the environment"),
                       (failed, "ListClusterNodes with AWS_ACCESS_KEY_ID failed: RuntimeError: denied")):
        assert check.exists is None and nodes.endpoint_waits(check, "k3") is None
        (warning,) = check.warnings
        assert warning.startswith(f"HyperPod cluster k3's instances not checked ({why}): with deep health checks on, "
                                  "the endpoint is created on this update, and its deadline includes the checks")
