"""Every check of test_stacks.py fails on a planted mistake: the mistake is planted in the rendered objects (or the
node profile), the stack deployed on a clean cluster, and the check must name it.

Six deployments carry the plantings, grouped so that none hides another (a server that cannot schedule would
hide a drain blocked by its PDB): aws-eks twice, gcp-a4xmax three times, kubernetes-gb300-nvl72 once.
"""

import json
from collections.abc import Iterator
from typing import Any

import pytest

from . import checks
from .deploy import Deployment
from .fixtures import cluster  # noqa: F401 (the fixture)
from .local import LocalCluster


def _pod_specs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc["spec"]
    if doc["kind"] == "LeaderWorkerSet":
        t = spec["leaderWorkerTemplate"]
        return [t[k]["spec"] for k in ("leaderTemplate", "workerTemplate") if k in t]
    return [spec["template"]["spec"]]


class TestEksMistakes:
    """The plantings of one deployment (class-scoped: each deployment is cleaned before the next)."""

    @pytest.fixture(scope="class")
    @classmethod
    def eks_mistakes(cls, cluster: LocalCluster) -> Iterator[Deployment]:
        """aws-eks with a verify Job selecting a pool no node has and a PDB of maxUnavailable 0 on the server; after
        it settles, another field manager takes a label of the server's Service."""
        dep = Deployment(cluster, "aws-eks")
        verify = dep.find("Job", "k3-verify")
        _pod_specs(verify)[0]["nodeSelector"] = {"k3infra.io/pool": "k3-gpu-typo"}
        server = dep.find("Deployment", "k3-server")
        dep.documents.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                              "metadata": {"name": "k3-server", "namespace": server["metadata"]["namespace"]},
                              "spec": {"maxUnavailable": 0, "selector": server["spec"]["selector"]}})
        try:
            dep.deploy()
            service = dep.find("Service", "k3-server")
            other = {"apiVersion": "v1", "kind": "Service", "metadata": {
                "name": "k3-server", "namespace": service["metadata"]["namespace"],
                "labels": {"app.kubernetes.io/part-of": "someone-else"}}}
            cluster.kubectl("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-",
                            input=json.dumps(other))
            yield dep
        finally:
            dep.clean()


    def test_a_selector_no_node_has_leaves_the_pod_unscheduled(self, eks_mistakes: Deployment) -> None:
        problems = checks.placement(eks_mistakes)
        assert len(problems) == 1 and problems[0].startswith("pod k3-verify-") and "not scheduled" in problems[0]
        assert "didn't match Pod's node affinity/selector" in problems[0]


    def test_a_job_that_cannot_run_never_completes(self, eks_mistakes: Deployment) -> None:
        assert [p.split(" not complete")[0] for p in checks.jobs_complete(eks_mistakes)] == ["Job/kimi-k3/k3-verify"]


    def test_a_pdb_of_max_unavailable_zero_blocks_the_drain(self, eks_mistakes: Deployment) -> None:
        problems = checks.drain(eks_mistakes, timeout="10s")
        assert len(problems) == 1 and "disruption budget" in problems[0], problems


    def test_another_field_manager_makes_the_reapply_conflict(self, eks_mistakes: Deployment) -> None:
        problems = checks.reapply(eks_mistakes)
        assert any(p.startswith("re-apply Service/kimi-k3/k3-server:") and "conflict" in p.lower() for p in problems), problems


class TestEksUnschedulable:
    """The plantings of one deployment (class-scoped: each deployment is cleaned before the next)."""

    @pytest.fixture(scope="class")
    @classmethod
    def eks_unschedulable(cls, cluster: LocalCluster) -> Iterator[Deployment]:
        """aws-eks whose server tolerates a misspelt taint key, and whose Service names an invalid port (behind the
        installed gateway, the server's one Service is its ClusterIP)."""
        dep = Deployment(cluster, "aws-eks")
        for spec in _pod_specs(dep.find("Deployment", "k3-server")):
            for t in spec["tolerations"]:
                if t["key"] == "nvidia.com/gpu":
                    t["key"] = "nvidia.com/gpus"
        dep.find("Service", "k3-server")["spec"]["ports"][0]["port"] = 70000
        try:
            yield dep.deploy()
        finally:
            dep.clean()


    def test_a_wrong_toleration_key_leaves_the_server_unscheduled(self, eks_unschedulable: Deployment) -> None:
        problems = [p for p in checks.placement(eks_unschedulable) if p.startswith("pod k3-server-")]
        assert len(problems) == 1 and "untolerated taint" in problems[0], problems


    def test_an_unready_server_gets_no_traffic(self, eks_unschedulable: Deployment) -> None:
        assert checks.serving_endpoints(eks_unschedulable) == ["Service k3-server: no ready endpoint"]


    def test_the_apiserver_refuses_an_invalid_object(self, eks_unschedulable: Deployment) -> None:
        problems = checks.admitted(eks_unschedulable)
        assert len(problems) == 1 and problems[0].startswith("Service/kimi-k3/k3-server:")
        assert "must be between 1 and 65535" in problems[0]


class TestGkeMistakes:
    """The plantings of one deployment (class-scoped: each deployment is cleaned before the next)."""

    @pytest.fixture(scope="class")
    @classmethod
    def gke_mistakes(cls, cluster: LocalCluster) -> Iterator[Deployment]:
        """gcp-a4xmax claiming 9 RDMA NICs of 8, with nodes without huge pages, and workers that read a leader address
        variable the controller does not set."""
        dep = Deployment(cluster, "gcp-a4xmax")
        dep.find("ResourceClaimTemplate", "k3-server-rdma")["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 9
        worker = dep.find("LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
        worker["args"] = [a.replace("$(LWS_LEADER_ADDRESS)", "$(LWS_LEADER_ADDR)") for a in worker["args"]]
        for node in dep.profile.nodes:
            for table in ("capacity", "allocatable"):
                node["status"][table]["hugepages-2Mi"] = "0"
        try:
            yield dep.deploy()
        finally:
            dep.clean()


    def test_a_claim_no_slice_satisfies_stays_unallocated(self, gke_mistakes: Deployment) -> None:
        problems = checks.claims(gke_mistakes)
        assert problems and all(p.startswith("claim k3-server-lws-") and p.endswith("not allocated") for p in problems)
        assert any("cannot allocate all claims" in p for p in checks.placement(gke_mistakes))


    def test_a_daemonset_short_of_node_resources_is_reported(self, gke_mistakes: Deployment) -> None:
        problems = [p for p in checks.placement(gke_mistakes) if p.startswith("DaemonSet/")]
        assert problems == ["DaemonSet/kube-system/asapd-lite: desired 2, scheduled 2, ready 0 on 2 GPU nodes"] or \
            any("asapd-lite" in p for p in problems), problems


    def test_an_undefined_leader_variable_is_reported(self, gke_mistakes: Deployment) -> None:
        problems = checks.leader_address(gke_mistakes)
        assert problems and all("$(LWS_LEADER_ADDR) is not defined" in p for p in problems), problems


    def test_without_its_quota_the_dra_driver_critical_pods_are_refused(self, gke_mistakes: Deployment) -> None:
        quota = gke_mistakes.find("ResourceQuota")
        gke_mistakes.cluster.kubectl("delete", "resourcequota", quota["metadata"]["name"], "-n",
                                     quota["metadata"]["namespace"])
        problems = checks.critical_pods_admitted(gke_mistakes)
        assert len(problems) == 1 and "insufficient quota to match these scopes" in problems[0], problems


    def test_the_apiserver_runs_the_compute_domain_cel_rule(self, gke_mistakes: Deployment) -> None:
        server_domain = gke_mistakes.find("ComputeDomain", "k3-server-nvlink-0")
        domain = dict(server_domain, spec={**server_domain["spec"], "numNodes": 3})
        errors = gke_mistakes.apply([domain])
        assert list(errors.values()) and "A computeDomain.spec is immutable" in list(errors.values())[0]


class TestGkeSplitDomain:
    """The plantings of one deployment (class-scoped: each deployment is cleaned before the next)."""

    @pytest.fixture(scope="class")
    @classmethod
    def gke_split_domain(cls, cluster: LocalCluster) -> Iterator[Deployment]:
        """gcp-a4xmax whose second GPU node is in another sub-block, with the server's pod affinity taken out."""
        dep = Deployment(cluster, "gcp-a4xmax")
        for spec in _pod_specs(dep.find("LeaderWorkerSet")):
            spec.pop("affinity", None)
        second = dep.profile.nodes[[n["metadata"]["name"] for n in dep.profile.nodes].index(dep.profile.gpu_nodes[1])]
        second["metadata"]["labels"]["cloud.google.com/gce-topology-subblock"] = "another-subblock"
        try:
            yield dep.deploy()
        finally:
            dep.clean()


    def test_a_replica_across_two_domains_is_reported(self, gke_split_domain: Deployment) -> None:
        problems = checks.topology(gke_split_domain)
        assert len(problems) == 1 and "span cloud.google.com/gce-topology-subblock" in problems[0], problems


class TestGkeBlindSpots:
    """Mistakes the control plane once missed (issue 41), in one deployment (neither hides the other)."""

    @pytest.fixture(scope="class")
    @classmethod
    def gke_blind_spots(cls, cluster: LocalCluster) -> Iterator[Deployment]:
        """gcp-a4xmax whose LWS worker template lost its DRA claims, and whose server Service selects with every
        value wrong."""
        dep = Deployment(cluster, "gcp-a4xmax")
        worker = dep.find("LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
        worker.pop("resourceClaims")
        for container in worker["containers"]:
            container["resources"].pop("claims", None)
        selector = dep.find("Service", "k3-server")["spec"]["selector"]
        selector.update({k: f"{v}-typo" for k, v in selector.items()})
        try:
            yield dep.deploy()
        finally:
            dep.clean()

    def test_worker_pods_without_their_claims_are_reported(self, gke_blind_spots: Deployment) -> None:
        assert checks.claims(gke_blind_spots) == []  # every claim there is allocated: the old check saw nothing
        assert checks.claim_classes(gke_blind_spots) == [
            "pod k3-server-lws-0-1: no claim of device class compute-domain-default-channel.nvidia.com",
            "pod k3-server-lws-0-1: no claim of device class mrdma.google.com"]

    def test_a_server_service_whose_selector_matches_nothing_is_reported(self, gke_blind_spots: Deployment) -> None:
        assert checks.serving_endpoints(gke_blind_spots) == ["Service k3-server: no ready endpoint"]


class TestExistingClusterGroupShort:
    """An existing-cluster stack on its kwok nodes, with its LWS group one node too small."""

    @pytest.fixture(scope="class")
    @classmethod
    def group_short(cls, cluster: LocalCluster) -> Iterator[Deployment]:
        dep = Deployment(cluster, "kubernetes-gb300-nvl72")
        dep.find("LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]["size"] = 1
        try:
            yield dep.deploy()
        finally:
            dep.clean()

    def test_a_group_one_node_short_is_reported(self, group_short: Deployment) -> None:
        assert checks.group_sizes(group_short) == [
            "LeaderWorkerSet/kimi-k3/k3-server-lws: group size 1, the plan's sizing 2 node(s) per replica",
            "LeaderWorkerSet/kimi-k3/k3-server-lws group 0: 1 pod(s), the plan's sizing 2"]


class TestGkePdSplitDomain:
    """Issue 37: a disaggregated stack's decode group split across NVLink domains is caught on the control plane."""

    @pytest.fixture(scope="class")
    @classmethod
    def pd_split_domain(cls, cluster: LocalCluster) -> Iterator[Deployment]:
        """gcp-a4xmax-pd whose GPU nodes are half in another sub-block, the decode group's pod affinity taken out:
        its four pods cannot all land in one domain of three nodes."""
        dep = Deployment(cluster, "gcp-a4xmax-pd")
        for spec in _pod_specs(dep.find("LeaderWorkerSet", "k3-decode-lws")):
            spec.pop("affinity", None)
        names = [n["metadata"]["name"] for n in dep.profile.nodes]
        for gpu in dep.profile.gpu_nodes[len(dep.profile.gpu_nodes) // 2:]:
            dep.profile.nodes[names.index(gpu)]["metadata"]["labels"][
                "cloud.google.com/gce-topology-subblock"] = "another-subblock"
        try:
            yield dep.deploy()
        finally:
            dep.clean()

    def test_a_decode_group_across_two_domains_is_reported(self, pd_split_domain: Deployment) -> None:
        problems = checks.topology(pd_split_domain)
        assert len(problems) == 1 and "k3-decode-lws" in problems[0], problems
        assert "span cloud.google.com/gce-topology-subblock" in problems[0]
