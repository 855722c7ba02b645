"""What a pinned version of an add-on, driver or chart can do for a stack: the Kubernetes minors it supports and the
capabilities a stack may use from it (the identity mechanism it reads credentials from, the node provider ids it
parses, where its node plugin runs).

Issue 36 found two stacks using what their pinned versions lack: the Mountpoint CSI driver v1 given EKS Pod Identity,
which only its v2 reads, and a Cluster Autoscaler that aborts its loop on HyperPod provider ids, four minors behind
the control plane. Each pinned version records its facts here with their source; tests/test_version_capabilities.py
derives from every stack's plan what the stack uses from each component and fails when a pinned version lacks it or
the cluster's minor is outside the version's range.
"""

from dataclasses import dataclass
from enum import StrEnum

from .eks_versions import key as minor_key, minor as minor_of


class Capability(StrEnum):
    """Something a stack may need from a component's version."""

    IRSA = "IAM roles for service accounts (a projected web identity token)"
    """The component's AWS SDK reads the credentials IRSA's webhook injects (``AWS_WEB_IDENTITY_TOKEN_FILE``)."""
    EKS_POD_IDENTITY = "EKS Pod Identity (the agent's container credentials)"
    """The component's AWS SDK reads EKS Pod Identity's ``AWS_CONTAINER_CREDENTIALS_FULL_URI`` with
    ``AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`` (EKS User Guide, pod-id-minimum-sdk: older SDKs ignore them)."""
    POD_LEVEL_IRSA = "mounts with the mounting pod's IRSA role (authenticationSource: pod)"
    POD_LEVEL_POD_IDENTITY = "mounts with the mounting pod's EKS Pod Identity role (authenticationSource: pod)"
    HYPERPOD_PROVIDER_IDS = "skips nodes whose provider id is a SageMaker HyperPod instance's"
    """``aws:///<zone>/sagemaker/cluster/hyperpod-<cluster>-<instance>`` (kubernetes/autoscaler #7540)."""
    TAINTED_NODES = "its node plugin runs on nodes with any taint by default"
    """A CSI node DaemonSet that tolerates every taint: pods on tainted GPU nodes can mount its volumes."""


@dataclass(frozen=True)
class KubernetesRange:
    """The Kubernetes minors a version supports, as its source states them."""

    minimum: str | None
    """Oldest minor (``None``: the source states no floor)."""
    maximum: str | None
    """Newest minor (``None``: the source states no ceiling)."""
    source: str
    """Where the range was read."""

    def admits(self, version: str) -> bool:
        """``version`` (``1.35``, ``1.35.2``) is within the range."""
        k = minor_key(version)
        return ((self.minimum is None or minor_key(self.minimum) <= k)
                and (self.maximum is None or k <= minor_key(self.maximum)))

    def __str__(self) -> str:
        if self.minimum and self.minimum == self.maximum:
            return f"Kubernetes {self.minimum} only"
        if self.minimum and self.maximum:
            return f"Kubernetes {self.minimum} to {self.maximum}"
        if self.minimum:
            return f"Kubernetes {self.minimum} and later"
        return f"Kubernetes up to {self.maximum}" if self.maximum else "any Kubernetes version"


ANY_KUBERNETES = KubernetesRange(None, None, "no range stated")
"""A version whose source states no Kubernetes range."""


@dataclass(frozen=True)
class VersionFacts:
    """What one pinned version of a component supports."""

    kubernetes: KubernetesRange
    """The Kubernetes minors it supports."""
    capabilities: frozenset[Capability]
    """What a stack may use from this version; nothing else."""
    source: str
    """Where the capabilities were read (repository, tag or commit, path)."""
    unconfirmed: str = ""
    """What could not be confirmed here and how to check it (``""``: every fact above was read at its source)."""
    reads_provider_ids: bool = False
    """The component maps nodes to cloud instances by ``spec.providerID``: on a cluster with HyperPod instances it
    needs :attr:`Capability.HYPERPOD_PROVIDER_IDS`."""


def facts(kubernetes: KubernetesRange, source: str, *capabilities: Capability, unconfirmed: str = "",
          reads_provider_ids: bool = False) -> VersionFacts:
    """A :class:`VersionFacts` with its capabilities listed inline."""
    return VersionFacts(kubernetes, frozenset(capabilities), source, unconfirmed, reads_provider_ids)


def lacks(what: str, version_facts: VersionFacts, kubernetes: str | None, uses: frozenset[Capability]) -> list[str]:
    """Why ``what`` (a component at its pinned version) cannot serve a stack on ``kubernetes`` (a version; ``None``:
    the cluster's minor is not pinned) that uses ``uses`` from it; empty when it can."""
    out = [f"{what} lacks {c.name} ({c.value}); its facts: {version_facts.source}"
           for c in sorted(uses - version_facts.capabilities)]
    if kubernetes is not None and not version_facts.kubernetes.admits(kubernetes):
        out.append(f"{what} supports {version_facts.kubernetes} ({version_facts.kubernetes.source}), and the cluster "
                   f"runs {minor_of(kubernetes)}")
    return out
