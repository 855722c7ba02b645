"""ACK on its first and every later `pulumi up`: a private API server by default with the way to reach it in the
plan, no automatic upgrade unless asked, and every automatic operation inside one maintenance window."""

import pulumi
import pytest

from k3infra import offline
from k3infra.alicloud.cluster import AckCluster
from k3infra.config import ConfigError, parse_config
from k3infra.maintenance import first_occurrence
from tests.alicloud.test_config import ACK, PAI
from tests.configs import with_
from tests.support import plan, record

REGION = {"alicloud:region": "ap-southeast-1"}
MK = "alicloud:cs/managedKubernetes:ManagedKubernetes"
NP = "alicloud:cs/nodePool:NodePool"
OFF = {"enable": False, "autoRepair": False, "autoUpgrade": False, "autoUpgradePolicy": {"autoUpgradeKubelet": False},
       "autoVulFix": False, "autoVulFixPolicy": {"restartNode": False}, "maxUnavailable": 1}


def cluster(**extra):
    return record(lambda: AckCluster("k3", {"cluster_name": "k3-test", "zone_id": "ap-southeast-1c", **extra}),
                  config=REGION)


def test_the_api_server_is_private_by_default_and_the_plan_says_how_to_reach_it():
    p = plan("alicloud-ack")
    assert offline.plain(p.recording.one(MK, "k3-cluster").inputs)["slbInternetEnabled"] is False
    reach = [w for w in p.recording.outputs["warnings"] if "API server" in w]
    assert len(reach) == 1 and reach[0].startswith("the ACK API server has only a VPC address")
    assert "VPN Gateway, CEN or Express Connect" in reach[0] and "alicloud.publicApiServer: true" in reach[0]
    assert p.recording.outputs["apiServerIntranet"].startswith("https://10.")


def test_a_public_api_server_is_a_choice_and_drops_the_statement():
    p = plan("alicloud-ack", "alicloud.publicApiServer=true")
    assert offline.plain(p.recording.one(MK, "k3-cluster").inputs)["slbInternetEnabled"] is True
    assert not [w for w in p.recording.outputs["warnings"] if "API server has only a VPC address" in w]


@pytest.mark.parametrize("name, value", [("publicApiServer", True), ("upgradeChannel", "patch"),
                                         ("nodeAutoUpgrade", False), ("maintenanceWindow", {"day": "Monday"})])
def test_pai_refuses_the_ack_cluster_settings(name, value):
    with pytest.raises(ConfigError) as e:
        parse_config(with_(PAI, alicloud={**PAI["k3infra:alicloud"], name: value}), stack="t")
    assert [(p.key, p.reason) for p in e.value.problems] == [
        (f"k3infra:alicloud.{name}", "applies to ACK clusters; a PAI-EAS service has none")]


def test_no_automatic_upgrade_by_default_inside_a_sunday_window():
    rec = cluster()
    k = offline.plain(rec.one(MK, "k3-cluster").inputs)
    assert k["maintenanceWindow"] == {"enable": True, "maintenanceTime": "2025-01-12T02:00:00.000+00:00",
                                      "duration": "4h", "weeklyPeriod": "Sunday"}
    assert k["operationPolicy"] == {"clusterAutoUpgrade": {"enabled": False}}
    assert offline.plain(rec.one(NP, "k3-system").inputs)["management"] == OFF


def test_channel_and_node_upgrades_from_the_stack_reach_both_pools():
    p = plan("alicloud-ack", "alicloud.upgradeChannel=stable", "alicloud.nodeAutoUpgrade=true",
             "alicloud.maintenanceWindow.day=Wednesday", "alicloud.maintenanceWindow.durationHours=6")
    k = offline.plain(p.recording.one(MK, "k3-cluster").inputs)
    assert k["operationPolicy"] == {"clusterAutoUpgrade": {"enabled": True, "channel": "stable"}}
    assert k["maintenanceWindow"]["weeklyPeriod"] == "Wednesday" and k["maintenanceWindow"]["duration"] == "6h"
    on = {**OFF, "enable": True, "autoUpgrade": True, "autoUpgradePolicy": {"autoUpgradeKubelet": True},
          "autoVulFix": True, "autoVulFixPolicy": {"restartNode": True}}
    for pool in ("k3-system", "k3-gpu-pool"):
        assert offline.plain(p.recording.one(NP, pool).inputs)["management"] == on
    said = [w for w in p.recording.outputs["warnings"] if w.startswith("alicloud.")]
    assert said == [
        "alicloud.upgradeChannel stable: ACK upgrades the control plane on Wednesdays 02:00 UTC for 6 h; node pools "
        "follow only with alicloud.nodeAutoUpgrade",
        "alicloud.nodeAutoUpgrade: ACK upgrades kubelet and the runtime and fixes CVEs, restarting nodes, on "
        "Wednesdays 02:00 UTC for 6 h; a GPU node's restart stops the replica it serves until it reloads the weights"]


def test_the_gpu_pool_takes_the_clusters_management_block():
    assert offline.plain(plan("alicloud-ack").recording.one(NP, "k3-gpu-pool").inputs)["management"] == OFF


def test_an_auto_upgrade_channel_refuses_a_pinned_version():
    with pytest.raises(ConfigError) as e:
        parse_config(with_(ACK, alicloud={"upgradeChannel": "patch"}, cluster={"kubernetesVersion": "1.33"}),
                     stack="t")
    (problem,) = e.value.problems
    assert problem.key == "k3infra:cluster.kubernetesVersion"
    assert "ACK asks for no version with cluster auto-upgrade" in problem.reason
    with pytest.raises(pulumi.InputPropertyError) as ie:
        cluster(upgrade_channel="patch", kubernetes_version="1.33")
    assert ie.value.property_path == "kubernetes_version"


@pytest.mark.parametrize("day, start, expected", [
    ("Monday", "00:00", "2025-01-06T00:00:00.000+00:00"),
    ("Sunday", "02:00", "2025-01-12T02:00:00.000+00:00"),
    ("Thursday", "23:59", "2025-01-09T23:59:00.000+00:00"),
])
def test_first_occurrence_falls_on_the_windows_weekday(day, start, expected):
    assert first_occurrence({"day": day, "start_time": start, "duration_hours": 4}) == expected
