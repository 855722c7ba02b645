"""Computed outputs of AWS resources and functions (pulumi-aws and pulumi-aws-native).

Values are derived from resource names, inputs and the stack's configuration (``aws:region``,
``k3infra:zone``), so an offline plan is deterministic and every ARN names its real service: an EKS
cluster gets an ``arn:aws:eks:REGION:ACCOUNT:cluster/NAME`` ARN, an endpoint and an OIDC issuer, a role an
``arn:aws:iam::ACCOUNT:role/NAME`` ARN, a launch template a ``latestVersion``. Capacity Block lookups answer
with a block that fits the stack (its zone, instance type and node count); tests replace them to
exercise mismatches.
"""

import base64
import hashlib
from datetime import datetime, timedelta, timezone
from typing import Any

from pulumi.runtime import config as runtime_config

from ..catalog.hyperpod import IEC_API_VERSION, IEC_KIND
from ..config.runtime import raw_pulumi_config
from ..config.validate import parse_config
from .registry import FAKE_ACCOUNT, function, provider_default, resource

DEFAULT_REGION = "us-west-2"
DEFAULT_KUBERNETES_VERSION = "1.33"
"""What EKS reports when a cluster names no version (offline assumption)."""

#: Capacity Block price per instance-hour, for the offline offering's upfront fee (docs/catalog-research.md).
CAPACITY_BLOCK_HOURLY_USD = {"p6-b300.48xlarge": 112.32, "p5en.48xlarge": 49.928}


def _config(key: str) -> str | None:
    try:
        value = runtime_config.get_config(key)
    except Exception:  # noqa: BLE001 - outside a program run there is no configuration
        return None
    return value if isinstance(value, str) and value else None


def region() -> str:
    """The stack's ``aws:region`` (offline default us-west-2)."""
    return _config("aws:region") or DEFAULT_REGION


def zone() -> str:
    """The stack's ``k3infra:zone`` (offline default: the region's zone a)."""
    return _config("k3infra:zone") or f"{region()}a"


def digest(name: str, n: int) -> str:
    """``n`` hex digits derived from ``name``: stable fake identifiers."""
    return hashlib.sha256(name.encode()).hexdigest()[:n]


def _name(name: str, inputs: dict[str, Any], key: str = "name") -> str:
    """The physical name: the one given, else Pulumi's auto-name (logical name + 7 characters)."""
    given = inputs.get(key)
    return given if isinstance(given, str) and given else f"{name}-{digest(name, 7)}"


def _service(typ: str) -> tuple[str, str]:
    """(module, resource) of a type token ``aws:module/resource:Resource``."""
    mod_res = typ.split(":")[1]
    module, _, res = mod_res.partition("/")
    return module, res


@provider_default("aws:")
def aws_resource(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A generic ARN for resources without their own entry below."""
    return {"arn": f"arn:aws:offline:{region()}:{FAKE_ACCOUNT}:{inputs.get('name') or name}"}


def _ec2(prefix: str):
    def state(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
        rid = f"{prefix}-{digest(name, 17)}"
        return {"id": rid, "arn": f"arn:aws:ec2:{region()}:{FAKE_ACCOUNT}:{prefix}/{rid}", "ownerId": FAKE_ACCOUNT}
    return state


for _typ, _prefix in (
    ("aws:ec2/vpc:Vpc", "vpc"),
    ("aws:ec2/subnet:Subnet", "subnet"),
    ("aws:ec2/internetGateway:InternetGateway", "igw"),
    ("aws:ec2/routeTable:RouteTable", "rtb"),
    ("aws:ec2/routeTableAssociation:RouteTableAssociation", "rtbassoc"),
    ("aws:ec2/vpcEndpoint:VpcEndpoint", "vpce"),
    ("aws:ec2/natGateway:NatGateway", "nat"),
    ("aws:ec2/securityGroup:SecurityGroup", "sg"),
):
    resource(_typ)(_ec2(_prefix))


@resource("aws:ec2/eip:Eip")
def eip(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An Elastic IP: allocation id and a documentation-range address."""
    return {"id": f"eipalloc-{digest(name, 17)}", "allocationId": f"eipalloc-{digest(name, 17)}",
            "publicIp": f"198.51.100.{int(digest(name, 2), 16) % 250 + 1}"}


@resource("aws:ec2/launchTemplate:LaunchTemplate")
def launch_template(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A launch template starts at version 1."""
    lt = f"lt-{digest(name, 17)}"
    return {"id": lt, "arn": f"arn:aws:ec2:{region()}:{FAKE_ACCOUNT}:launch-template/{lt}", "latestVersion": 1,
            "defaultVersion": 1, "name": _name(name, inputs)}


def _block_dates(start: str | None, hours: int) -> tuple[str, str]:
    when = datetime.fromisoformat(start.replace("Z", "+00:00")) if start else datetime(2026, 12, 1, 11, 30, tzinfo=timezone.utc)
    # Capacity Blocks start at 11:30 UTC (EC2 User Guide, capacity-blocks-using).
    when = when.replace(hour=11, minute=30, second=0, microsecond=0)
    return (when.strftime("%Y-%m-%dT%H:%M:%SZ"), (when + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ"))


@resource("aws:ec2/capacityBlockReservation:CapacityBlockReservation")
def capacity_block_reservation(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A purchased block: a cr- id, the stack's zone and a one-week window from the offering's start."""
    offering = inputs.get("capacityBlockOfferingId") or name
    start, end = _block_dates(None, 168)
    rid = f"cr-{digest(offering, 17)}"
    return {"id": rid, "arn": f"arn:aws:ec2:{region()}:{FAKE_ACCOUNT}:capacity-reservation/{rid}",
            "availabilityZone": zone(), "startDate": start, "endDate": end, "reservationType": "capacity-block",
            "instanceType": _config("k3infra:accelerator") or "p6-b300.48xlarge", "instanceCount": _stack_nodes(),
            "tenancy": "default", "ebsOptimized": True, "createdDate": "2026-11-20T09:00:00Z"}


@resource("aws:iam/role:Role")
def iam_role(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A role ARN in the IAM namespace (global: no region)."""
    n = _name(name, inputs)
    return {"id": n, "name": n, "arn": f"arn:aws:iam::{FAKE_ACCOUNT}:role/{n}", "uniqueId": f"AROA{digest(n, 17).upper()}"}


@resource("aws:iam/policy:Policy")
def iam_policy(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A customer managed policy ARN."""
    n = _name(name, inputs)
    return {"id": f"arn:aws:iam::{FAKE_ACCOUNT}:policy/{n}", "name": n, "arn": f"arn:aws:iam::{FAKE_ACCOUNT}:policy/{n}"}


@resource("aws:kms/key:Key")
def kms_key(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A KMS key: a UUID key id and its ARN."""
    h = digest(name, 32)
    kid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
    return {"id": kid, "keyId": kid, "arn": f"arn:aws:kms:{region()}:{FAKE_ACCOUNT}:key/{kid}"}


@resource("aws:iam/openIdConnectProvider:OpenIdConnectProvider")
def oidc_provider(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An IAM OIDC provider ARN names the issuer host and path."""
    url = str(inputs.get("url") or "").removeprefix("https://")
    return {"arn": f"arn:aws:iam::{FAKE_ACCOUNT}:oidc-provider/{url}"}


@resource("aws:eks/cluster:Cluster")
def eks_cluster(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Endpoint, CA data, OIDC issuer and cluster security group, as EKS reports them."""
    n = _name(name, inputs)
    r = region()
    oidc_id = digest(f"oidc-{n}", 32).upper()
    ca = base64.b64encode(f"-----BEGIN CERTIFICATE-----\noffline CA of {n}\n-----END CERTIFICATE-----\n".encode()).decode()
    vpc = dict(inputs.get("vpcConfig") or {})
    vpc.update({"clusterSecurityGroupId": f"sg-{digest('csg-' + n, 17)}", "vpcId": f"vpc-{digest(n, 17)}"})
    return {
        "id": n,
        "name": n,
        "arn": f"arn:aws:eks:{r}:{FAKE_ACCOUNT}:cluster/{n}",
        "endpoint": f"https://{digest('ep-' + n, 32).upper()}.gr7.{r}.eks.amazonaws.com",
        "certificateAuthority": {"data": ca},
        "identities": [{"oidcs": [{"issuer": f"https://oidc.eks.{r}.amazonaws.com/id/{oidc_id}"}]}],
        "vpcConfig": vpc,
        "version": inputs.get("version") or DEFAULT_KUBERNETES_VERSION,
        "platformVersion": "eks.1",
        "status": "ACTIVE",
    }


@resource("aws:eks/nodeGroup:NodeGroup")
def eks_node_group(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A node group ARN and the Auto Scaling group behind it."""
    n = _name(name, inputs, "nodeGroupName")
    cluster = inputs.get("clusterName") or "cluster"
    return {"id": f"{cluster}:{n}", "nodeGroupName": n,
            "arn": f"arn:aws:eks:{region()}:{FAKE_ACCOUNT}:nodegroup/{cluster}/{n}/{digest(n, 8)}",
            "resources": [{"autoscalingGroups": [{"name": f"eks-{n}-{digest(n, 8)}"}]}], "status": "ACTIVE"}


@resource("aws:eks/addon:Addon")
def eks_addon(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An add-on reports the version EKS installed."""
    return {"id": f"{inputs.get('clusterName')}:{inputs.get('addonName')}",
            "arn": f"arn:aws:eks:{region()}:{FAKE_ACCOUNT}:addon/{inputs.get('clusterName')}/{inputs.get('addonName')}/"
                   f"{digest(name, 8)}",
            "addonVersion": inputs.get("addonVersion") or "v1.0.0-eksbuild.1"}


@resource("aws:eks/podIdentityAssociation:PodIdentityAssociation")
def pod_identity_association(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An association id and ARN."""
    aid = f"a-{digest(name, 17)}"
    return {"id": aid, "associationId": aid,
            "associationArn": f"arn:aws:eks:{region()}:{FAKE_ACCOUNT}:podidentityassociation/"
                              f"{inputs.get('clusterName')}/{aid}"}


@resource("aws:s3/bucket:Bucket")
def s3_bucket(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A bucket's name (given or from its prefix) and its ARN (S3 ARNs carry no region or account)."""
    b = inputs.get("bucket") or f"{inputs.get('bucketPrefix') or name + '-'}{digest(name, 12)}"
    return {"id": b, "bucket": b, "arn": f"arn:aws:s3:::{b}", "region": region(),
            "bucketRegionalDomainName": f"{b}.s3.{region()}.amazonaws.com"}


@resource("aws-native:sagemaker:Cluster")
def sagemaker_cluster(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A HyperPod cluster ARN ends in a 12-character id (CloudFormation pattern cluster/[a-z0-9]{12})."""
    cid = digest(name, 12)
    return {"clusterArn": f"arn:aws:sagemaker:{region()}:{FAKE_ACCOUNT}:cluster/{cid}", "clusterStatus": "InService",
            "creationTime": "2026-11-20T09:00:00Z"}


@resource(f"kubernetes:{IEC_API_VERSION}:{IEC_KIND}")
def inference_endpoint_config(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The HyperPod inference operator reports the ALB name in the certificate status once deployed."""
    meta = dict(inputs.get("metadata") or {})
    meta.setdefault("name", name)
    alb = f"internal-k8s-{digest(name, 8)}-{digest('alb' + name, 10)}.{region()}.elb.amazonaws.com"
    return {"metadata": meta, "status": {"state": "DeploymentComplete",
                                         "tlsCertificate": {"certificateDomainNames": [alb]}}}


@function("aws:index/getCallerIdentity:getCallerIdentity")
def caller_identity(args: dict[str, Any]) -> dict[str, Any]:
    """The account the program runs as."""
    return {"accountId": FAKE_ACCOUNT, "arn": f"arn:aws:iam::{FAKE_ACCOUNT}:user/offline", "userId": "OFFLINE", "id": FAKE_ACCOUNT}


@function("aws:index/getRegion:getRegion")
def get_region(args: dict[str, Any]) -> dict[str, Any]:
    """The provider's region."""
    r = args.get("region") or region()
    return {"id": r, "name": r, "region": r, "endpoint": f"ec2.{r}.amazonaws.com", "description": r}


@function("aws:index/getAvailabilityZones:getAvailabilityZones")
def availability_zones(args: dict[str, Any]) -> dict[str, Any]:
    """Four zones, a to d."""
    r = args.get("region") or region()
    names = [f"{r}{z}" for z in "abcd"]
    return {"id": r, "names": names, "zoneIds": [f"{_zone_id_prefix(r)}-az{i}" for i in range(1, 5)], "region": r,
            "groupNames": [r] * 4}


def _zone_id_prefix(r: str) -> str:
    """us-west-2 -> usw2, ap-southeast-1 -> apse1 (how AWS abbreviates regions in zone ids)."""
    parts = r.split("-")
    if len(parts) != 3:
        return r
    direction = "".join(w[0] for w in parts[1].replace("north", "n-").replace("south", "s-").replace("east", "e-")
                        .replace("west", "w-").replace("central", "c-").split("-") if w)
    return f"{parts[0]}{direction}{parts[2]}"


def _stack_nodes() -> int:
    """GPU nodes the stack being planned needs (its sizing), 1 when it cannot be read."""
    try:
        cfg = parse_config(raw_pulumi_config(), stack="offline", from_strings=True)
    except Exception:  # noqa: BLE001 - a mock answers even when the program's configuration is partial
        return 1
    return cfg.total_nodes


@function("aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation")
def capacity_block_lookup(args: dict[str, Any]) -> dict[str, Any]:
    """An active block in the stack's zone, of the stack's instance type, as large as the stack."""
    rid = args.get("id") or "cr-00000000000000000"
    start, end = _block_dates("2026-12-01T00:00:00Z", 14 * 24)
    return {
        "id": rid, "capacityBlockId": f"cb-{digest(rid, 17)}", "arn": f"arn:aws:ec2:{args.get('region') or region()}:"
        f"{FAKE_ACCOUNT}:capacity-reservation/{rid}", "availabilityZone": zone(), "availabilityZoneId": f"{_zone_id_prefix(region())}-az1",
        "instanceType": _config("k3infra:accelerator") or "p6-b300.48xlarge", "instanceCount": _stack_nodes(),
        "availableInstanceCount": _stack_nodes(), "startDate": start, "endDate": end, "state": "active",
        "reservationType": "capacity-block", "instancePlatform": "Linux/UNIX", "tenancy": "default",
        "ownerId": FAKE_ACCOUNT, "region": args.get("region") or region(), "createdDate": "2026-11-20T09:00:00Z",
        "ebsOptimized": True, "endDateType": "limited", "tags": {},
    }


@function("aws:ec2/getCapacityBlockOffering:getCapacityBlockOffering")
def capacity_block_offering(args: dict[str, Any]) -> dict[str, Any]:
    """One offering in the stack's zone; its upfront fee is the instance-hour rate x hours x instances."""
    hours = int(args.get("capacityDurationHours") or 24)
    count = int(args.get("instanceCount") or 1)
    itype = str(args.get("instanceType") or "p6-b300.48xlarge")
    fee = CAPACITY_BLOCK_HOURLY_USD.get(itype, 100.0) * hours * count
    return {**args, "capacityBlockOfferingId": f"cb-{digest(str(sorted(args.items())), 17)}",
            "availabilityZone": zone(), "currencyCode": "USD", "upfrontFee": f"{fee:.2f}", "tenancy": "default",
            "instanceCount": count, "instanceType": itype, "capacityDurationHours": hours}


@resource("aws:amp/workspace:Workspace")
def amp_workspace(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An AMP workspace: ws- id, ARN and query endpoint."""
    ws = f"ws-{digest(name, 8)}-{digest(name + 'a', 4)}-{digest(name + 'b', 4)}-{digest(name + 'c', 4)}-{digest(name + 'd', 12)}"
    return {"id": ws, "arn": f"arn:aws:aps:{region()}:{FAKE_ACCOUNT}:workspace/{ws}",
            "prometheusEndpoint": f"https://aps-workspaces.{region()}.amazonaws.com/workspaces/{ws}/"}


@resource("aws:amp/scraper:Scraper")
def amp_scraper(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An AMP managed collector and the service-linked role it scrapes with (a path, as AWS creates it)."""
    sid = f"s-{digest(name, 8)}-{digest(name + 'a', 4)}-{digest(name + 'b', 4)}-{digest(name + 'c', 4)}-{digest(name + 'd', 12)}"
    return {"id": sid, "arn": f"arn:aws:aps:{region()}:{FAKE_ACCOUNT}:scraper/{sid}",
            "roleArn": f"arn:aws:iam::{FAKE_ACCOUNT}:role/aws-service-role/scraper.aps.amazonaws.com/"
                       f"AWSServiceRoleForAmazonPrometheusScraper_{digest(name, 15)}"}
