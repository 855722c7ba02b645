"""Alibaba Cloud Container Registry (ACR) endpoints: which image hosts exist, and what pulling from each needs.

Three host forms, and no other (every one a `.aliyuncs.com` name, so a mistyped one is caught, not sent):

- Personal Edition, instances created before 2024-09-09: ``registry[-vpc].REGION.aliyuncs.com`` (ACR "Terms",
  alibabacloud.com/help/en/acr/product-overview/terms: "Personal Edition registry.cn-hangzhou.aliyuncs.com/
  namespace/repository:tag"; "Personal Edition instance exclusive endpoint", alibabacloud.com/help/en/acr/user-guide/
  individual-edition-instance-independent-domain-name-capacity-limit: earlier instances' VPC endpoint
  ``registry-vpc.cn-hangzhou.aliyuncs.com``). Note: no ``.cr.`` in it.
- Personal Edition, instances created since 2024-09-09: ``crpi-ID[-vpc].REGION.personal.cr.aliyuncs.com`` (the
  same page: "crpi-<instance-id>[-vpc].<region-id>.personal.cr.aliyuncs.com"), with two restrictions: "A secret is
  required to pull images" (anonymous pulls are not supported) and "Public endpoints cannot be used to pull images".
- Enterprise Edition: ``INSTANCE-registry[-vpc].REGION.cr.aliyuncs.com``, the instance's name first (ACR "Terms":
  "Enterprise Edition instance-registry.cn-hangzhou.cr.aliyuncs.com/namespace/repository:tag"). Its VPC names
  resolve only in a VPC added to the instance's access control list ("Configure a VPC ACL",
  alibabacloud.com/help/en/acr/user-guide/configure-access-over-vpcs: the instance takes an IP in a vSwitch of that
  VPC and PrivateZone resolves the names to it), which is ``alicloud.cr.VpcEndpointLinkedVpc``.

EAS pulls without credentials "when the registry and service use the same Alibaba Cloud account and region"
(PAI, "Deploy a model service by using a custom image"); anything that needs a secret takes ``dockerAuth``, the
Base64 of ``username:password``, in the service JSON (PAI, "Service deployment via JSON").
"""

import re
from dataclasses import dataclass
from enum import StrEnum


class AcrEdition(StrEnum):
    """Which kind of ACR instance a host belongs to."""

    PERSONAL_LEGACY = "personal (before 2024-09-09)"
    PERSONAL = "personal"
    ENTERPRISE = "enterprise"


_REGION = r"(?P<region>[a-z]+-[a-z0-9-]+?)"
ACR_HOSTS: dict[AcrEdition, re.Pattern[str]] = {
    AcrEdition.PERSONAL_LEGACY: re.compile(rf"registry(?P<vpc>-vpc)?\.{_REGION}\.aliyuncs\.com"),
    AcrEdition.PERSONAL: re.compile(rf"crpi-(?P<instance>[a-z0-9]+)(?P<vpc>-vpc)?\.{_REGION}\.personal\.cr\.aliyuncs\.com"),
    AcrEdition.ENTERPRISE: re.compile(
        rf"(?P<instance>[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)-registry(?P<vpc>-vpc)?\.{_REGION}\.cr\.aliyuncs\.com"),
}
"""The host of each edition (the module docstring cites the pages)."""


@dataclass(frozen=True)
class AcrEndpoint:
    """An ACR image host, parsed."""

    edition: AcrEdition
    region: str
    vpc: bool
    """The VPC endpoint (``-vpc``), reachable from the region's VPCs without the internet."""
    instance: str | None = None
    """The Enterprise instance's name, or the Personal instance's id after ``crpi-``; None for a legacy one."""

    @property
    def needs_secret(self) -> bool:
        """Pulls need credentials: a Personal instance created since 2024-09-09 refuses anonymous pulls."""
        return self.edition == AcrEdition.PERSONAL

    @property
    def needs_vpc_link(self) -> bool:
        """The pulling VPC must be on the instance's access control list (Enterprise VPC endpoints)."""
        return self.edition == AcrEdition.ENTERPRISE and self.vpc

    @property
    def can_pull(self) -> bool:
        """A new Personal instance's public endpoint serves pushes only ("Public endpoints cannot be used to pull")."""
        return self.vpc or self.edition != AcrEdition.PERSONAL


def parse_acr_host(host: str) -> AcrEndpoint | None:
    """The ACR endpoint ``host`` is, or None when it is not one of the three forms."""
    for edition, pattern in ACR_HOSTS.items():
        m = pattern.fullmatch(host)
        if m:
            groups = m.groupdict()
            return AcrEndpoint(edition=edition, region=m.group("region"), vpc=bool(m.group("vpc")),
                               instance=groups.get("instance"))
    return None


def vpc_forms(region: str) -> str:
    """The VPC image references a stack in ``region`` may give, one per form."""
    return (f"registry-vpc.{region}.aliyuncs.com/NAMESPACE/REPOSITORY:TAG (Personal Edition before 2024-09-09), "
            f"crpi-ID-vpc.{region}.personal.cr.aliyuncs.com/NAMESPACE/REPOSITORY:TAG (Personal Edition, with "
            f"k3infra:registryAuth) or INSTANCE-registry-vpc.{region}.cr.aliyuncs.com/NAMESPACE/REPOSITORY:TAG "
            "(Enterprise Edition, with alicloud.acrInstanceId)")
