"""The vCPU quota gate for Azure GPU pools.

ND GB300 v6 quota defaults to 0 and an increase takes days to approve (002 §4.2), so a pool that would
exceed it must fail at preview, not an hour into `pulumi up`. Two sources, in this order:

1. ``k3infra:azure.quotaVcpus``: the stack states the approved quota. Checked with the configuration
   (``k3infra.config.clouds.azure``), before any resource exists; no lookup is made.
2. A lookup of the regional usage. azure-native 3.29.0 has no function that reads usage, so the Azure SDK
   does it (``ComputeManagementClient.usage.list(location)``, the same data as ``az vm list-usage``) behind
   :class:`UsageReader`. It runs only where Azure credentials are evident in the environment and never under
   the offline recording engine; otherwise the gate is skipped with a warning that says how to enable it.

What counts against the quota: every VM of the pool, ``nodes x vCPUs per node``. A Capacity Reservation the
stack creates consumes that quota when it is created, so the need must fit in ``limit - current usage``. An
existing reservation group already holds its vCPUs in the current usage and the pool's VMs are deployed
into it, so the need is compared with the limit alone.
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Protocol

import pulumi

from ..config import StackConfig


@dataclass(frozen=True)
class FamilyUsage:
    """Regional vCPU usage and limit of one quota family, as the Compute usage API reports it."""

    family: str
    """``name.value`` of the usage, e.g. ``standardNDISRGB300V6Family``."""
    current: int
    limit: int


class UsageReader(Protocol):
    """Something that lists the regional usage of every quota family."""

    def regional_usage(self, location: str) -> Iterable[FamilyUsage]:
        """Usage of every family in ``location`` (an Azure region name such as ``eastus2``)."""
        ...


class ComputeUsageReader:
    """:class:`UsageReader` over azure-mgmt-compute's ``ComputeManagementClient``."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def regional_usage(self, location: str) -> Iterable[FamilyUsage]:
        """``client.usage.list(location)``: one item per family with ``name.value``, ``current_value``, ``limit``."""
        for item in self._client.usage.list(location):
            yield FamilyUsage(family=str(item.name.value), current=int(item.current_value), limit=int(item.limit))


def compute_usage_reader(subscription_id: str) -> UsageReader:
    """A reader that signs in with ``DefaultAzureCredential`` (environment, workload identity, managed identity,
    Azure CLI; never an interactive browser)."""
    from azure.identity import DefaultAzureCredential
    from azure.mgmt.compute import ComputeManagementClient

    credential = DefaultAzureCredential(exclude_interactive_browser_credential=True)
    return ComputeUsageReader(ComputeManagementClient(credential, subscription_id))


ReaderFactory = Callable[[str], UsageReader]


def credentials_source(env: Mapping[str, str], home: Path | None = None) -> str | None:
    """Where Azure credentials are evident without signing in (a short description), or None.

    Looks at what ``DefaultAzureCredential`` and the azure-native provider read: a service principal or
    workload identity in ``AZURE_*`` or ``ARM_*`` variables, a managed identity the provider is told to use,
    or an Azure CLI profile with a subscription. Nothing here contacts Azure.
    """
    for prefix in ("AZURE_", "ARM_"):
        if env.get(prefix + "CLIENT_ID") and env.get(prefix + "TENANT_ID"):
            for secret in ("CLIENT_SECRET", "CLIENT_CERTIFICATE_PATH", "FEDERATED_TOKEN_FILE", "OIDC_TOKEN",
                           "OIDC_TOKEN_FILE_PATH", "OIDC_REQUEST_TOKEN"):
                if env.get(prefix + secret):
                    return f"{prefix}CLIENT_ID with {prefix}{secret}"
    if env.get("ARM_USE_MSI", "").lower() == "true" or env.get("IDENTITY_ENDPOINT"):
        return "a managed identity"
    config_dir = Path(env["AZURE_CONFIG_DIR"]) if env.get("AZURE_CONFIG_DIR") else (home or Path.home()) / ".azure"
    profile = config_dir / "azureProfile.json"
    try:
        data = json.loads(profile.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and data.get("subscriptions"):
        return f"the Azure CLI login in {profile}"
    return None


@dataclass(frozen=True)
class QuotaNeed:
    """What a pool asks of one quota family."""

    family: str
    nodes: int
    vcpus_per_node: int
    sku: str
    reservation_created: bool
    """True when the stack creates the Capacity Reservation (it consumes quota on creation)."""

    @property
    def vcpus(self) -> int:
        """vCPUs the pool needs: nodes x vCPUs per node."""
        return self.nodes * self.vcpus_per_node

    def describe(self) -> str:
        """``2 x Standard_ND128isr_GB300_v6 x 128 vCPUs = 256 vCPUs``."""
        return f"{self.nodes} x {self.sku} x {self.vcpus_per_node} vCPUs = {self.vcpus} vCPUs"


def need_of(cfg: StackConfig) -> QuotaNeed | None:
    """The quota a stack's GPU pool needs, or None when the SKU has no quota family in the catalog."""
    accel = cfg.accelerator
    if accel.quota_family is None:
        return None
    return QuotaNeed(family=accel.quota_family, nodes=cfg.total_nodes, vcpus_per_node=accel.vcpus, sku=accel.sku,
                     reservation_created=cfg.capacity.create)


class QuotaError(pulumi.RunError):
    """The GPU pool would exceed the family's vCPU quota (raised at preview, before any resource)."""


@dataclass(frozen=True)
class QuotaCheck:
    """The outcome of the gate."""

    family: str
    need_vcpus: int
    limit_vcpus: int | None
    """None when nothing was checked."""
    in_use_vcpus: int | None
    source: str
    """``config`` (azure.quotaVcpus), ``lookup`` (the usage API) or ``skipped``."""
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        """A stack output."""
        return {"family": self.family, "needVcpus": self.need_vcpus, "limitVcpus": self.limit_vcpus,
                "inUseVcpus": self.in_use_vcpus, "source": self.source}


def usage_problem(need: QuotaNeed, usage: FamilyUsage, location: str) -> str | None:
    """Why ``usage`` cannot hold ``need``, or None."""
    if need.reservation_created:
        free = usage.limit - usage.current
        if need.vcpus > free:
            return (f"{need.family} vCPU quota in {location} is too small for the reservation k3infra would create: "
                    f"need {need.describe()}, limit {usage.limit} vCPUs with {usage.current} in use "
                    f"({free} free). Request an increase under Quotas > Compute (002 §4.2; approval takes days)")
        return None
    if need.vcpus > usage.limit:
        return (f"{need.family} vCPU quota in {location} is too small for the pool: need {need.describe()}, "
                f"limit {usage.limit} vCPUs ({usage.current} in use). Request an increase under Quotas > Compute "
                "(002 §4.2; approval takes days)")
    return None


def _subscription(cfg: StackConfig, env: Mapping[str, str]) -> str | None:
    sub = cfg.azure.subscription_id if cfg.azure else None
    return sub or env.get("AZURE_SUBSCRIPTION_ID") or env.get("ARM_SUBSCRIPTION_ID")


def gate(
    cfg: StackConfig,
    *,
    offline: bool,
    env: Mapping[str, str] | None = None,
    reader_factory: ReaderFactory = compute_usage_reader,
    home: Path | None = None,
) -> QuotaCheck | None:
    """Check the pool against the family's quota; raise :class:`QuotaError` when it does not fit.

    Returns None for a SKU without a quota family. ``offline`` (the recording engine) never makes a lookup.
    """
    need = need_of(cfg)
    if need is None or cfg.azure is None:
        return None
    env = os.environ if env is None else env
    location = cfg.azure.location
    if cfg.azure.quota_vcpus is not None:
        # Already checked against the need with the configuration (ConfigError before any resource).
        return QuotaCheck(need.family, need.vcpus, cfg.azure.quota_vcpus, None, "config")

    def skipped(why: str) -> QuotaCheck:
        return QuotaCheck(need.family, need.vcpus, None, None, "skipped", (
            f"{need.family} quota not checked ({why}): the pool needs {need.describe()}; state the approved quota "
            "in k3infra:azure.quotaVcpus to check it offline (002 §4.2: it defaults to 0)",))

    if offline:
        return skipped("offline plan: no Azure lookup")
    source = credentials_source(env, home)
    if source is None:
        return skipped("no Azure credentials in the environment")
    subscription = _subscription(cfg, env)
    if subscription is None:
        return skipped("no subscription id: set azure-native:subscriptionId")
    try:
        usages = list(reader_factory(subscription).regional_usage(location))
    except Exception as e:  # noqa: BLE001 - any SDK or sign-in failure degrades to a warning, never a crash
        return skipped(f"the usage lookup with {source} failed: {type(e).__name__}: {e}")
    usage = next((u for u in usages if u.family.lower() == need.family.lower()), None)
    if usage is None:
        return skipped(f"{location} reports no usage for {need.family}; the family name is UNCONFIRMED "
                       "(docs/catalog-research.md §1.4), check `az vm list-usage`")
    problem = usage_problem(need, usage, location)
    if problem:
        raise QuotaError(problem)
    return QuotaCheck(need.family, need.vcpus, usage.limit, usage.current, "lookup")
