"""``k3infra:status.group``: the stack creates the read-only roles status needs, with the very rules ``--print-role``
prints for the same plan, bound to the group; off by default; a system: group, whitespace, or a managed platform is
refused with its key."""

import pytest

from k3infra.config import ConfigError
from k3infra.status import access
from k3infra.status.expected import expected
from tests.support import plan

RBAC = "kubernetes:rbac.authorization.k8s.io/v1:"


def rbac(p, kind: str) -> list[dict]:
    return [r.inputs for r in p.recording.ordered() if r.type == RBAC + kind and r.name.startswith("k3-status")]


@pytest.mark.parametrize("stack", ["aws-eks", "gcp-a4xmax"])
def test_the_stack_creates_the_printed_roles_bound_to_the_group(stack) -> None:
    p = plan(stack, "status.group=oncall")
    cluster_role, role = access.roles(expected(p))
    (made_cluster_role,), (made_role,) = rbac(p, "ClusterRole"), rbac(p, "Role")
    assert made_cluster_role["rules"] == cluster_role["rules"]
    assert made_cluster_role["metadata"]["name"] == cluster_role["metadata"]["name"] == "kimi-k3-k3-status-nodes"
    assert made_role["rules"] == role["rules"]
    assert (made_role["metadata"]["name"], made_role["metadata"]["namespace"]) == ("k3-status", "kimi-k3")
    subjects = [b["subjects"] for kind in ("ClusterRoleBinding", "RoleBinding") for b in rbac(p, kind)]
    assert subjects == [[{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "oncall"}]] * 2
    assert p.recording.outputs["statusAccess"] == {"group": "oncall", "clusterRole": "kimi-k3-k3-status-nodes",
                                                   "role": "k3-status", "namespace": "kimi-k3"}


def test_off_by_default() -> None:
    p = plan("aws-eks")
    assert rbac(p, "Role") == [] and rbac(p, "ClusterRoleBinding") == []
    assert "statusAccess" not in p.recording.outputs


@pytest.mark.parametrize(("stack", "group", "problem"), [
    ("aws-eks", "system:authenticated", "k3infra:status.group: is not well formed (given: 'system:authenticated'; "
     "allowed: a group name without whitespace, not a system: group)"),
    ("aws-eks", "on call", "k3infra:status.group: is not well formed (given: 'on call'; allowed: a group name "
     "without whitespace, not a system: group)"),
    ("alicloud-pai", "oncall", "k3infra:status.group: binds the roles of the Kubernetes workload the stack creates, "
     "and on pai-eas the platform runs the server (given: 'oncall'; allowed: unset, or a Kubernetes platform (ack, "
     "aks, eks, existing-cluster, gke))"),
])
def test_a_group_that_would_hand_out_too_much_or_has_nothing_to_bind_is_refused(stack, group, problem) -> None:
    with pytest.raises(ConfigError) as e:
        plan(stack, f"status.group={group}")
    assert [str(pr) for pr in e.value.problems] == [problem] or problem in e.value.render()
