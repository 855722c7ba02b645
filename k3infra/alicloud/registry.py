"""How ACK's nodes reach and pull the engine image from Container Registry (ACR).

- The VPC: an Enterprise instance's VPC names resolve only in VPCs on its access control list (ACR "Configure a VPC
  ACL"), so the cluster's VPC joins it (``cr.VpcEndpointLinkedVpc``).
- The credentials: a private repository pulls only with credentials, and ACK's nodes get them from the managed
  ``aliyun-acr-credential-helper`` add-on (k3infra.catalog.ack ``ACR_HELPER_*``), which writes short-lived registry
  credentials into a Secret and attaches it to the service accounts it serves. k3infra installs it for the image's
  instance and host only, for the serving namespace only, pulling with ACK's ``AliyunCSManagedAcrRole`` (same
  account: no RRSA, no worker-role grant).

The add-on attaches the Secret to a service account some time after the account exists, and a pod takes its
service account's image pull secrets when it is created: the pods that pull the engine image (the pre-pull
DaemonSet, the placement check, the server) wait for the add-on, and are created once GPU nodes exist, minutes after
the namespace and its service accounts. ACK's ``acr-credential-helper-webhook`` add-on would attach it at creation;
its add-on name is on no page, so k3infra does not install it.
"""

import json
from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from .. import names
from ..catalog.ack import ACR_HELPER_ADDON
from ..catalog.acr import AcrEndpoint
from ..config import AlicloudConfig, StackConfig
from ..config.clouds.alicloud import acr_endpoint, image_host
from .cluster import AckCluster


@dataclass(frozen=True)
class AcrInstanceInfo:
    """One registry instance the add-on fetches credentials for."""

    region: str
    """Region of the instance."""
    domain: str
    """The one host the credentials are for: the image's (the add-on's default is every host of the instance)."""
    instance_id: str | None = None
    """The Enterprise instance's id; None for a Personal Edition instance, which the add-on takes without one."""

    def to_json(self) -> dict[str, str]:
        """The entry of ``AcrInstanceInfo``."""
        out = {"regionId": self.region, "domains": self.domain}
        if self.instance_id:
            out["instanceId"] = self.instance_id
        return out


@dataclass(frozen=True)
class AcrHelperConfig:
    """The managed credential helper's configuration. The keys are the page's form's (catalog.ack ``ACR_HELPER_PAGE``:
    ``AcrInstanceInfo`` with per instance ``InstanceId``, empty for a Personal instance, ``regionId`` and ``domains``;
    ``watchNamespace``, default ``default``, "avoid configuring all"; ``serviceAccount``, ``*`` for every account of
    those namespaces; RRSA on or off), spelt as public Terraform configurations send them (``instanceId``,
    ``enableRRSA``; UNCONFIRMED by an Alibaba page)."""

    instance: AcrInstanceInfo
    """The image's instance."""
    namespace: str
    """The only namespace whose service accounts get the credentials."""

    def to_json(self) -> str:
        """The add-on's ``config``: every service account of the namespace (the server's, the default one the pre-pull
        DaemonSet and the placement check run as, the checklist's), RRSA off (pulls within the account)."""
        return json.dumps({"AcrInstanceInfo": [self.instance.to_json()], "enableRRSA": False, "serviceAccount": "*",
                           "watchNamespace": self.namespace}, sort_keys=True)


def helper_config(cfg: StackConfig, acr: AcrEndpoint) -> AcrHelperConfig:
    """The credential helper's configuration for the stack's image."""
    ali = cfg.alicloud
    return AcrHelperConfig(
        instance=AcrInstanceInfo(region=acr.region, domain=image_host(cfg.image),
                                 instance_id=ali.acr_instance_id if ali else None),
        namespace=cfg.namespace)


def registry_link(ali: AlicloudConfig, acr: AcrEndpoint | None, cluster: AckCluster) -> list[pulumi.Resource]:
    """The cluster's VPC on the Enterprise registry's access control list, when the image is on its VPC endpoint
    (ACR "Configure a VPC ACL": the names resolve only there)."""
    instance = ali.acr_instance_id
    if not instance or acr is None or not acr.needs_vpc_link:
        return []
    return [alicloud.cr.VpcEndpointLinkedVpc(f"{names.PREFIX}-registry-vpc", alicloud.cr.VpcEndpointLinkedVpcArgs(
        instance_id=instance, module_name="Registry", vpc_id=cluster.vpc_id,
        vswitch_id=cluster.node_vswitch_id, enable_create_dns_record_in_pvzt=True))]


def registry_access(cfg: StackConfig, cluster: AckCluster) -> list[pulumi.Resource]:
    """What the pods that pull the engine image wait for: the VPC link and the credential helper, where the image
    is on ACR (nothing for another registry)."""
    ali = cfg.alicloud
    acr = acr_endpoint(cfg.image)
    if ali is None or acr is None:
        return []
    helper = alicloud.cs.KubernetesAddon(f"{names.PREFIX}-acr-credential-helper", alicloud.cs.KubernetesAddonInitArgs(
        cluster_id=cluster.cluster_id, name=ACR_HELPER_ADDON, config=helper_config(cfg, acr).to_json()))
    return [*registry_link(ali, acr, cluster), helper]
