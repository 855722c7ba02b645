"""Computed outputs of Alibaba Cloud resources and functions.

Ids follow Alibaba's shapes (``vpc-...``, ``vsw-...``, ``c...`` cluster ids, ``np...`` node pools,
``acs:ram::ACCOUNT:role/NAME``), derived from the resource name so two runs agree. The region comes from the
stack's ``alicloud:region`` (the offline engine sets the configuration before the program runs).
"""

import hashlib
import json
from typing import Any

from pulumi.runtime import config as runtime_config

from .registry import function, provider_default, resource

FAKE_ALICLOUD_ACCOUNT = "5123456789012345"
"""Alibaba Cloud account (UID) in offline plans: 16 digits, like a real one."""

CLUSTER_CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk9GRkxJTkUtQ0EKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
"""base64 of a placeholder PEM block (``OFFLINE-CA``)."""


def _hex(name: str, n: int) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:n]


def region() -> str:
    """The stack's region, as ``alicloud:region`` sets it (``ap-southeast-1`` when unset)."""
    return runtime_config.get_config("alicloud:region") or "ap-southeast-1"


def cluster_id(name: str) -> str:
    """An ACK cluster id: ``c`` and 32 hexadecimal digits."""
    return "c" + _hex(name, 32)


@provider_default("alicloud:")
def alicloud_resource(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Alibaba Cloud ids are opaque strings."""
    return {"id": f"{name}-id"}


@resource("alicloud:vpc/network:Network")
def vpc(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A VPC id and its system route table."""
    return {"id": "vpc-" + _hex(name, 17), "routeTableId": "vtb-" + _hex(name + "rt", 17), "status": "Available"}


@resource("alicloud:vpc/switch:Switch")
def vswitch(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A vSwitch id."""
    return {"id": "vsw-" + _hex(name, 17), "status": "Available"}


@resource("alicloud:ecs/securityGroup:SecurityGroup")
def security_group(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A security group id."""
    return {"id": "sg-" + _hex(name, 17)}


@resource("alicloud:cs/managedKubernetes:ManagedKubernetes")
def managed_kubernetes(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An ACK cluster: id, node security group, NAT gateway, the RRSA OIDC provider and the API endpoints."""
    cid = cluster_id(name)
    r = region()
    out: dict[str, Any] = {
        "id": cid,
        "securityGroupId": "sg-" + _hex(name + "sg", 17),
        "natGatewayId": "ngw-" + _hex(name + "ngw", 17),
        "vpcId": "vpc-" + _hex(name + "vpc", 17),
        "clusterSpec": inputs.get("clusterSpec", "ack.pro.small"),
        "version": inputs.get("version") or "1.33.3-aliyun.1",
        "connections": [{
            "apiServerIntranet": f"https://10.0.0.{int(_hex(name, 2), 16) % 250 + 2}:6443",
            "apiServerInternet": f"https://{cid[:12]}.{r}.cs.aliyuncs.com:6443",
            "serviceDomain": f"*.{cid}.{r}.alicontainer.com",
        }],
    }
    if inputs.get("enableRrsa"):
        provider = f"ack-rrsa-{cid}"
        out["rrsaMetadata"] = {
            "enabled": True,
            "ramOidcProviderName": provider,
            "ramOidcProviderArn": f"acs:ram::{FAKE_ALICLOUD_ACCOUNT}:oidc-provider/{provider}",
            "rrsaOidcIssuerUrl": f"https://oidc-ack-{r}.oss-{r}.aliyuncs.com/{cid}",
        }
    return out


@resource("alicloud:cs/nodePool:NodePool")
def node_pool(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A node pool: ``CLUSTER:np...`` as the provider composes it, and the scaling group behind it."""
    np_id = "np" + _hex(name, 30)
    return {"id": f"{inputs.get('clusterId', 'c')}:{np_id}", "nodePoolId": np_id,
            "scalingGroupId": "asg-" + _hex(name, 17)}


@resource("alicloud:cs/kubernetesAddon:KubernetesAddon")
def kubernetes_addon(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An installed add-on: ``CLUSTER:NAME`` and the version ACK picked."""
    return {"id": f"{inputs.get('clusterId', 'c')}:{inputs.get('name', name)}",
            "version": inputs.get("version") or "v0.4.0", "nextVersion": ""}


@resource("alicloud:ram/role:Role")
def ram_role(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A RAM role's ARN and id."""
    role = inputs.get("roleName") or name
    return {"id": role, "arn": f"acs:ram::{FAKE_ALICLOUD_ACCOUNT}:role/{role}", "roleId": _hex(name, 19)}


@resource("alicloud:ram/policy:Policy")
def ram_policy(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A custom policy is known by its name."""
    return {"id": inputs.get("policyName") or name, "defaultVersion": "v1", "attachmentCount": 0}


@resource("alicloud:ram/rolePolicyAttachment:RolePolicyAttachment")
def ram_attachment(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """``role:ROLE:Custom:POLICY``, as the provider composes it."""
    return {"id": f"role:{inputs.get('policyName')}:{inputs.get('policyType')}:{inputs.get('roleName')}"}


@resource("alicloud:oss/bucket:Bucket")
def oss_bucket(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A bucket: its name is its id; endpoints of the stack's region."""
    bucket = inputs.get("bucket") or name
    r = region()
    return {"id": bucket, "bucket": bucket, "location": f"oss-{r}", "owner": FAKE_ALICLOUD_ACCOUNT,
            "extranetEndpoint": f"oss-{r}.aliyuncs.com", "intranetEndpoint": f"oss-{r}-internal.aliyuncs.com",
            "creationDate": "2026-09-01"}


@resource("alicloud:oss/bucketAcl:BucketAcl", "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock")
def oss_bucket_setting(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Bucket settings are known by the bucket."""
    return {"id": inputs.get("bucket") or name}


@resource("alicloud:cr/vpcEndpointLinkedVpc:VpcEndpointLinkedVpc")
def registry_vpc_link(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The provider's id ``instance:vpc:vswitch:module`` and the link's status."""
    parts = (inputs.get("instanceId"), inputs.get("vpcId"), inputs.get("vswitchId"), inputs.get("moduleName"))
    return {"id": ":".join(str(x) for x in parts), "status": "RUNNING"}


@resource("alicloud:pai/service:Service")
def pai_service(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An EAS service: known by its name; running."""
    try:
        service = json.loads(inputs.get("serviceConfig") or "{}").get("metadata", {}).get("name") or name
    except (TypeError, ValueError):
        service = name
    return {"id": service, "regionId": region(), "status": inputs.get("status") or "Running",
            "createTime": "2026-09-01T00:00:00Z"}


@function("alicloud:cs/getClusterCredential:getClusterCredential")
def cluster_credential(args: dict[str, Any]) -> dict[str, Any]:
    """A kubeconfig for the cluster, pointing at its internet API endpoint with a placeholder client certificate."""
    cid = args.get("clusterId") or "c"
    r = region()
    kubeconfig = "\n".join([
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "- cluster:",
        f"    server: https://{cid[:12]}.{r}.cs.aliyuncs.com:6443",
        f"    certificate-authority-data: {CLUSTER_CA}",
        "  name: kubernetes",
        "contexts:",
        "- context:",
        "    cluster: kubernetes",
        f"    user: {FAKE_ALICLOUD_ACCOUNT}",
        f"  name: {FAKE_ALICLOUD_ACCOUNT}-{cid}",
        f"current-context: {FAKE_ALICLOUD_ACCOUNT}-{cid}",
        "users:",
        f"- name: {FAKE_ALICLOUD_ACCOUNT}",
        "  user:",
        f"    client-certificate-data: {CLUSTER_CA}",
        f"    client-key-data: {CLUSTER_CA}",
        "",
    ])
    return {"id": cid, "clusterId": cid, "clusterName": cid, "kubeConfig": kubeconfig,
            "expiration": "2029-09-01T00:00:00Z", "certificateAuthorities": []}


@resource("alicloud:ram/accessKey:AccessKey")
def access_key(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An AccessKey pair: its id (``LTAI`` and 20 characters) and secret (30 characters), derived from the name."""
    return {"id": f"LTAI{_hex(name, 20)}", "secret": _hex("secret-" + name, 30), "status": "Active"}


@function("alicloud:arms/getPrometheus:getPrometheus")
def arms_prometheus(args: dict[str, Any]) -> dict[str, Any]:
    """The ARMS Prometheus instance of each id asked for (an ACK cluster's is keyed by the cluster id), its HTTP API
    addresses in the form the ARMS console shows (``http://REGION-intranet.arms.aliyuncs.com:9090/api/v1/prometheus/
    ...``; the path segments are offline stand-ins) and, with ``enableDetails``, its token."""
    r = region()
    ids = list(args.get("ids") or [])
    out = []
    for pid in ids:
        path = f"api/v1/prometheus/{_hex('arms-' + pid, 32)}/{FAKE_ALICLOUD_ACCOUNT}/{pid}/{r}"
        out.append({"id": pid, "clusterId": pid, "clusterType": "aliyun-cs", "prometheusName": pid,
                    "httpApiIntraUrl": f"http://{r}-intranet.arms.aliyuncs.com:9090/{path}",
                    "httpApiInterUrl": f"http://{r}.arms.aliyuncs.com:9090/{path}",
                    "authToken": _hex("token-" + pid, 40) if args.get("enableDetails") else ""})
    return {"id": r, "ids": ids, "prometheis": out}


@function("alicloud:index/getCallerIdentity:getCallerIdentity")
def caller_identity(args: dict[str, Any]) -> dict[str, Any]:
    """The account the credentials belong to."""
    return {"id": FAKE_ALICLOUD_ACCOUNT, "accountId": FAKE_ALICLOUD_ACCOUNT,
            "arn": f"acs:ram::{FAKE_ALICLOUD_ACCOUNT}:root", "identityType": "Account"}
