"""A kubeconfig for an EKS cluster that authenticates with ``aws eks get-token`` (no static credentials)."""

import json
from typing import Any


def kubeconfig(cluster_name: str, endpoint: str, ca_data: str, region: str) -> dict[str, Any]:
    """The kubeconfig document; the token comes from the caller's AWS credentials at each use."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
        "preferences": {},
        "users": [
            {
                "name": cluster_name,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", region,
                                 "--output", "json"],
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
    }


def kubeconfig_json(cluster_name: str, endpoint: str, ca_data: str, region: str) -> str:
    """The kubeconfig as JSON (valid YAML), as the Kubernetes provider and ``kubectl`` read it."""
    return json.dumps(kubeconfig(cluster_name, endpoint, ca_data, region), sort_keys=True)
