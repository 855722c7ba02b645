"""The policy pack under the real engine: ``pulumi preview --policy-pack`` blocks a planted violation and passes
the same program without it."""

from . import shims

PROJECT = "name: k3infra-e2e-policy\nruntime: python\n"
RULE = "public-endpoint-restricted"


def _preview(workspace, tmp_path, program: str):
    ws = workspace(PROJECT)
    ws.stack_init("policy")
    pack = shims.policy_pack(tmp_path / "pack")
    return ws.run(f"tests.e2e.programs:{program}", "preview", "-s", "policy", "--policy-pack", str(pack),
                  check=False)


def test_policy_pack_blocks_a_public_load_balancer(workspace, tmp_path) -> None:
    proc = _preview(workspace, tmp_path, "public_load_balancer")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "k3infra-guardrails" in out and RULE in out and "mandatory" in out, out
    assert "Service server is a public LoadBalancer without spec.loadBalancerSourceRanges" in out, out


def test_policy_pack_passes_an_internal_service(workspace, tmp_path) -> None:
    proc = _preview(workspace, tmp_path, "cluster_ip_service")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "k3infra-guardrails" in out and RULE not in out, out
