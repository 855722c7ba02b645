"""Small programs the real engine runs in the tests that need no k3infra stack (the policy pack's)."""

import pulumi
import pulumi_kubernetes as k8s

# No cluster: the provider previews against an address nothing listens on (it says the cluster is unreachable
# and previews from the inputs alone), so these programs need only the CLI and the provider.
UNREACHABLE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
"""


def _provider() -> k8s.Provider:
    return k8s.Provider("k8s", kubeconfig=UNREACHABLE_KUBECONFIG)


def _service(service_type: str) -> None:
    k8s.core.v1.Service(
        "server", metadata=k8s.meta.v1.ObjectMetaArgs(name="server", namespace="default"),
        spec=k8s.core.v1.ServiceSpecArgs(type=service_type, selector={"app": "server"},
                                         ports=[k8s.core.v1.ServicePortArgs(port=8000)]),
        opts=pulumi.ResourceOptions(provider=_provider()))


def public_load_balancer() -> None:
    """Planted violation of public-endpoint-restricted: a public LoadBalancer with no source ranges."""
    _service("LoadBalancer")


def cluster_ip_service() -> None:
    """The same Service kept inside the cluster: no rule applies."""
    _service("ClusterIP")


SECRET_OUTPUT = "e2e-output-secret-value"


def outputs_only() -> None:
    """No resource: a plain and a secret output, so the CLI, the file backend and the passphrase provider are
    exercised with no plugin at all."""
    pulumi.export("plain", {"answer": 42})
    pulumi.export("token", pulumi.Output.secret(SECRET_OUTPUT))
