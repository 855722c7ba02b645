"""PaiEasService: Kimi K3 as a PAI-EAS service (002 §6.2) on a dedicated resource group or a Lingjun quota."""

import base64
import re
import shlex
from dataclasses import replace
from typing import Mapping, NamedTuple, NotRequired, Optional, TypedDict

import pulumi
import pulumi_alicloud as alicloud

from .eas_config import (
    EasAutoscaler,
    EasCloud,
    EasContainer,
    EasEmptyDir,
    EasEnvVar,
    EasHttpGet,
    EasMetadata,
    EasNetworking,
    EasOss,
    EasProbe,
    EasRollingStrategy,
    EasServiceConfig,
    EasStorage,
    EasUnit,
)
from .autoscaling import EasAutoscalingArgs, eas_autoscaler
from .network import vswitch_cidrs
from ..component_args import reject_unknown
from ..sizing import rolling_update_timeout_seconds

SERVICE_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
"""EAS service names: lowercase letters, digits and underscores, starting with a letter, at most 32 characters."""

LINGJUN_QUOTA_TYPE = "Lingjun"
PROBE_PERIOD_SECONDS = 30


def endpoint(account_id: str, region: str, service: str, vpc: bool) -> str:
    """The EAS endpoint of a service: ``http://UID[.vpc].REGION.pai-eas.aliyuncs.com/api/predict/SERVICE``
    (the OpenAI routes live under it: ``.../v1/chat/completions``)."""
    host = f"{account_id}.vpc.{region}" if vpc else f"{account_id}.{region}"
    return f"http://{host}.pai-eas.aliyuncs.com/api/predict/{service}"


SURGE_ONE_UNIT = EasRollingStrategy(max_surge=1, max_unavailable=0)
"""An update starts one new unit beside the old ones and stops an old one only once the new one is ready."""
STOP_ONE_UNIT = EasRollingStrategy(max_surge=0, max_unavailable=1)
"""An update stops one old unit first and starts its replacement in the machines it frees."""


def rolling_strategy(machines: int, replicas: int, resource_machines: int) -> EasRollingStrategy:
    """How an update can replace the units in a resource of ``resource_machines``: beside the old ones when a
    whole unit of ``machines`` fits beside them, else one old unit is stopped first. EAS's default surges at
    least one instance, which a resource sized for the service cannot hold, so the update would never finish."""
    spare = resource_machines - machines * replicas
    if spare < 0:
        raise ValueError(f"holds {resource_machines} machines and the service needs {machines * replicas} "
                         f"({replicas} replica(s) of {machines})")
    return SURGE_ONE_UNIT if spare >= machines else STOP_ONE_UNIT


def eas_script(body: str) -> str:
    """The ``containers[].script`` EAS runs: the bash body quoted as one ``bash -c`` argument (EAS splits the
    script into arguments; a multi-line body must arrive as one)."""
    return "bash -c " + shlex.quote(body)


class PaiEasServiceArgs(TypedDict):
    """Inputs of a PaiEasService."""

    service_name: str
    """EAS service name: lowercase letters, digits, underscores; starts with a letter; at most 32 characters."""
    region: str
    """Region of the service (the provider's; the weight bucket must be in it too)."""
    zone_id: str
    """Zone of the vSwitch the instances attach to."""
    image: str
    """Engine image (an ACR mirror in the region is recommended, 002 §6.2 step 3)."""
    script: str
    """The bash body every machine runs; on a multi-machine unit it picks its role by ``RANK_ID`` (rank 0 serves
    HTTP). Build it with k3infra.serving.engine.vllm_command so the K3 flags are always there."""
    env: Mapping[str, str]
    """Container environment (002 §6.2 step 7: VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1)."""
    port: int
    """Port the engine serves on (002 §6.2 step 8: 8000)."""
    health_path: str
    """HTTP path of the engine's health check (vLLM ``/health``)."""
    startup_budget_seconds: int
    """How long a machine may take to load 1.56 TB and warm up before its probes count (the sizing's probe
    budget): the startup probe allows this long."""
    machines: int
    """Machines per replica (the sizing's nodes); more than one makes a distributed unit."""
    replicas: int
    """Replicas (units) of the service."""
    gpus_per_machine: int
    """GPUs each machine gives the container."""
    cpus_per_machine: int
    """vCPUs each machine gives the container."""
    memory_mb_per_machine: int
    """Memory (MB) each machine gives the container."""
    resource: str
    """What the service runs on: a Lingjun resource quota (quota...), required for more than one machine
    (002 §6.2), or an EAS dedicated resource group (eas-r-...)."""
    workspace_id: NotRequired[Optional[str]]
    """PAI workspace (required with a Lingjun quota: the quota is granted to it)."""
    model_uri: pulumi.Input[str]
    """``oss://bucket/prefix/<model>``: mounted read-only at ``mount_path``."""
    mount_path: NotRequired[str]
    """Where the model directory appears in the container (the script's model path). Default: /mnt/models."""
    vpc_cidr: NotRequired[str]
    """CIDR of the VPC created for the service's direct connection. Default: 10.0.0.0/8."""
    shm_gb: NotRequired[int]
    """Size of /dev/shm (memory). Default: 64 GB (002 §4.4)."""
    token: NotRequired[Optional[pulumi.Input[str]]]
    """Bearer token callers must present (a secret). Default: EAS generates one (shown in the console)."""
    docker_auth: NotRequired[Optional[pulumi.Input[str]]]
    """``USERNAME:PASSWORD`` for the image's registry (a secret), sent as ``dockerAuth``; the service definition is
    then a secret. Required for an ACR Personal instance created since 2024-09-09. Default: none (EAS pulls from ACR
    in its own account and region without credentials)."""
    registry_instance_id: NotRequired[Optional[str]]
    """ACR Enterprise instance (``cri-...``) whose VPC endpoint ``image`` names: the service's VPC joins its access
    control list (``cr.VpcEndpointLinkedVpc``) before the service is created. Default: none."""
    create_timeout_seconds: NotRequired[int]
    """How long `pulumi up` waits for the service to run. Default: the startup budget plus 30 minutes."""
    update_timeout_seconds: NotRequired[int]
    """How long `pulumi up` waits for an update to finish running. Default: the create timeout for every unit an
    update may replace, the autoscaler's maximum where there is one (an update replaces one unit at a time and each
    starts from scratch); the provider's own default is 16 minutes (terraform-provider-alicloud
    ``resource_alicloud_pai_service.go``), far short of one start."""
    resource_machines: NotRequired[Optional[int]]
    """Machines the quota or resource group holds for this service. Default: exactly ``machines * replicas``, so an
    update stops one unit before it starts the new one (``rolling_strategy`` max_surge 0, max_unavailable 1): with
    one replica the service is down for a whole start. Room for one more unit lets the update surge instead."""
    tags: NotRequired[Optional[Mapping[str, str]]]
    """Tags on the VPC resources and the service. Default: none."""
    autoscaling: NotRequired[Optional[EasAutoscalingArgs]]
    """Horizontal auto scaling between ``min_replicas`` and ``max_replicas`` units (``replicas`` is then the count
    the service starts with); ``resource_machines`` must hold ``max_replicas`` units, and the update strategy is
    chosen as if the service ran that many. Default: none (``replicas`` units, always)."""


class _Settings(NamedTuple):
    """A PaiEasService's arguments, checked, with what they decide."""

    service: str
    region: str
    zone: str
    machines: int
    replicas: int
    resource: str
    quota: bool
    """``resource`` is a Lingjun quota (else an EAS resource group)."""
    port: int
    budget: int
    autoscaler: Optional[EasAutoscaler]
    peak: int
    """Units the service may run at most: the autoscaler's maximum, else ``replicas``."""
    rolling: EasRollingStrategy
    vpc_cidr: str
    vswitch_cidr: str
    tags: dict[str, str]


class _Network(NamedTuple):
    """What the service's VPC direct connection attaches to."""

    vpc: alicloud.vpc.Network
    vswitch: alicloud.vpc.Switch
    security_group: alicloud.ecs.SecurityGroup


def _settings(args: PaiEasServiceArgs) -> _Settings:
    """The arguments checked (``InputPropertyError`` naming the first one wrong), the autoscaler, the update strategy
    and the vSwitch's range."""
    service = args["service_name"]
    if not SERVICE_NAME.fullmatch(service):
        raise pulumi.InputPropertyError("service_name", "EAS service names are lowercase letters, digits and "
                                        "underscores, start with a letter, at most 32 characters")
    machines, replicas = int(args["machines"]), int(args["replicas"])
    if machines < 1 or replicas < 1:
        raise pulumi.InputPropertyError("machines", "a service needs at least one machine per replica")
    resource = args["resource"]
    quota = resource.startswith("quota")
    if not quota and not resource.startswith("eas-r-"):
        raise pulumi.InputPropertyError("resource", "give an EAS resource group (eas-r-...) or a Lingjun quota (quota...)")
    if quota and not args.get("workspace_id"):
        raise pulumi.InputPropertyError("workspace_id", "a Lingjun quota is granted to a workspace: name it")
    if machines > 1 and not quota:
        raise pulumi.InputPropertyError("resource", "distributed deployment over several machines needs Lingjun "
                                        "resources and a quota (002 §6.2)")
    held = args.get("resource_machines")
    scaling = args.get("autoscaling")
    try:
        autoscaler = eas_autoscaler(scaling) if scaling else None
    except ValueError as e:
        raise pulumi.InputPropertyError("autoscaling", str(e)) from e
    peak = max(replicas, autoscaler.max) if autoscaler is not None else replicas
    try:
        rolling = rolling_strategy(machines, peak, machines * peak if held is None else int(held))
    except ValueError as e:
        raise pulumi.InputPropertyError("resource_machines", str(e)) from e
    vpc_cidr = args.get("vpc_cidr") or "10.0.0.0/8"
    try:
        (vsw_cidr,) = vswitch_cidrs(vpc_cidr, 1)
    except ValueError as e:
        raise pulumi.InputPropertyError("vpc_cidr", str(e)) from e
    return _Settings(service=service, region=args["region"], zone=args["zone_id"], machines=machines,
                     replicas=replicas, resource=resource, quota=quota, port=int(args["port"]),
                     budget=int(args["startup_budget_seconds"]), autoscaler=autoscaler, peak=peak, rolling=rolling,
                     vpc_cidr=vpc_cidr, vswitch_cidr=vsw_cidr, tags=dict(args.get("tags") or {}))


class PaiEasService(pulumi.ComponentResource):
    """A PAI-EAS service for Kimi K3 (002 §6.2): image deployment with the canonical vLLM command, the K3
    environment variable, the model mounted read-only from OSS, VPC direct connection (a VPC, vSwitch and
    security group created here), a dedicated resource group or Lingjun quota, and, for a replica over several
    machines, a distributed unit of that many machines. ``service_config`` is built from typed objects
    (eas_config) and serialised deterministically."""

    service_name: pulumi.Output[str]
    """The EAS service."""
    endpoint: pulumi.Output[str]
    """VPC endpoint of the service: the base URL (OpenAI routes under ``/v1``, health at ``/health``)."""
    public_endpoint: pulumi.Output[str]
    """Internet endpoint through EAS's shared gateway (token-guarded)."""
    service_config: pulumi.Output[str]
    """The service definition sent to EAS (secret when it carries a token or registry credentials)."""

    def __init__(self, name: str, args: PaiEasServiceArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("k3infra:index:PaiEasService", name, None, opts)
        reject_unknown(args, PaiEasServiceArgs)
        settings = _settings(args)
        net = self._network(name, settings)
        service_config, secret = _service_config(args, settings, net)
        registry_link = self._registry_link(name, args, net)
        svc = self._service(name, args, settings, service_config, secret, registry_link)
        self._outputs(settings, svc, service_config)

    def _network(self, name: str, settings: _Settings) -> _Network:
        """The VPC of the service's direct connection, its vSwitch and the security group the instances join."""
        service, tags = settings.service, settings.tags
        child = pulumi.ResourceOptions(parent=self)
        vpc = alicloud.vpc.Network(f"{name}-vpc", alicloud.vpc.NetworkArgs(
            vpc_name=f"{service}-eas", cidr_block=settings.vpc_cidr, tags=tags), opts=child)
        vsw = alicloud.vpc.Switch(f"{name}-vswitch", alicloud.vpc.SwitchArgs(
            vpc_id=vpc.id, zone_id=settings.zone, cidr_block=settings.vswitch_cidr, vswitch_name=f"{service}-eas",
            tags=tags), opts=child)
        sg = alicloud.ecs.SecurityGroup(f"{name}-sg", alicloud.ecs.SecurityGroupArgs(
            vpc_id=vpc.id, security_group_name=f"{service}-eas", security_group_type="normal",
            inner_access_policy="Accept",  # the machines of a unit reach each other (vLLM rendezvous, NCCL)
            description="k3infra: EAS instances of the Kimi K3 service (VPC direct connection)", tags=tags),
            opts=child)
        return _Network(vpc=vpc, vswitch=vsw, security_group=sg)

    def _registry_link(self, name: str, args: PaiEasServiceArgs,
                       net: _Network) -> Optional[alicloud.cr.VpcEndpointLinkedVpc]:
        """The service's VPC on the ACR Enterprise instance's access control list, or nothing without one.

        EAS pulls over this VPC: an Enterprise instance's VPC names resolve only in VPCs on its ACL (ACR "Configure
        a VPC ACL": the instance takes an IP in the vSwitch, PrivateZone points the names at it)."""
        registry_instance = args.get("registry_instance_id")
        if not registry_instance:
            return None
        return alicloud.cr.VpcEndpointLinkedVpc(f"{name}-registry-vpc", alicloud.cr.VpcEndpointLinkedVpcArgs(
            instance_id=registry_instance, module_name="Registry", vpc_id=net.vpc.id, vswitch_id=net.vswitch.id,
            enable_create_dns_record_in_pvzt=True), opts=pulumi.ResourceOptions(parent=self))

    def _service(self, name: str, args: PaiEasServiceArgs, settings: _Settings, service_config: pulumi.Output[str],
                 secret: bool, registry_link: Optional[alicloud.cr.VpcEndpointLinkedVpc]) -> alicloud.pai.Service:
        """The EAS service, with create and update timeouts long enough for its units to start."""
        timeout = int(args.get("create_timeout_seconds") or settings.budget + 1800)
        # An update replaces every unit running, up to the autoscaler's maximum, one at a time (rolling_strategy).
        update_timeout = int(args.get("update_timeout_seconds")
                             or rolling_update_timeout_seconds(timeout, settings.peak))
        return alicloud.pai.Service(f"{name}-service", alicloud.pai.ServiceArgs(
            service_config=service_config,
            workspace_id=args.get("workspace_id"),
            develop="false",
            tags=settings.tags,
        ), opts=pulumi.ResourceOptions(parent=self, custom_timeouts=pulumi.CustomTimeouts(
            create=f"{timeout}s", update=f"{update_timeout}s"),
                                       additional_secret_outputs=["service_config"] if secret else None,
                                       depends_on=[registry_link] if registry_link else None))

    def _outputs(self, settings: _Settings, svc: alicloud.pai.Service, service_config: pulumi.Output[str]) -> None:
        """The component's outputs (the endpoints from the caller's account), registered."""
        service, region = settings.service, settings.region
        account = alicloud.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        self.service = svc
        self.rolling = settings.rolling
        """How an update replaces the units (decided from ``resource_machines``; Python callers only)."""
        self.service_name = svc.id.apply(lambda _: service)
        self.endpoint = account.apply(lambda a: endpoint(a, region, service, vpc=True))
        self.public_endpoint = account.apply(lambda a: endpoint(a, region, service, vpc=False))
        self.service_config = service_config
        self.register_outputs({"service_name": self.service_name, "endpoint": self.endpoint,
                               "public_endpoint": self.public_endpoint, "service_config": self.service_config})


def _service_config(args: PaiEasServiceArgs, settings: _Settings, net: _Network) -> tuple[pulumi.Output[str], bool]:
    """The service definition as EAS takes it (JSON), and whether it is a secret (it carries a token or registry
    credentials)."""
    token, docker_auth = args.get("token"), args.get("docker_auth")
    config = pulumi.Output.all(net.vpc.id, net.vswitch.id, net.security_group.id, args["model_uri"]).apply(
        lambda ids: _eas_config(args, settings, list(ids)))
    secret = token is not None or docker_auth is not None
    if secret:
        return pulumi.Output.secret(pulumi.Output.all(config, token, docker_auth).apply(
            lambda v: _with_secrets(v[0], v[1], v[2]).to_json())), True
    return config.apply(lambda c: c.to_json()), False


def _eas_config(args: PaiEasServiceArgs, settings: _Settings, ids: list[str]) -> EasServiceConfig:
    """The typed service definition once the network and the model's URI are known: metadata, networking, the
    container with its probes, the OSS mount and /dev/shm, the unit and the autoscaler."""
    vpc_id, vsw_id, sg_id, uri = ids
    port, quota, resource, machines = settings.port, settings.quota, settings.resource, settings.machines
    mount_path = args.get("mount_path") or "/mnt/models"
    probe_budget = max(settings.budget, PROBE_PERIOD_SECONDS)
    health = EasHttpGet(path=args["health_path"], port=port)
    return EasServiceConfig(
        metadata=EasMetadata(
            name=settings.service,
            instance=settings.replicas,
            cpu=int(args["cpus_per_machine"]),
            memory=int(args["memory_mb_per_machine"]),
            gpu=int(args["gpus_per_machine"]),
            workspace_id=args.get("workspace_id"),
            resource=None if quota else resource,
            quota_id=resource if quota else None,
            quota_type=LINGJUN_QUOTA_TYPE if quota else None,
            rolling_strategy=settings.rolling,
        ),
        cloud=EasCloud(networking=EasNetworking(vpc_id=vpc_id, vswitch_id=vsw_id, security_group_id=sg_id)),
        containers=(EasContainer(
            image=args["image"],
            script=eas_script(args["script"]),
            port=port,
            env=tuple(EasEnvVar(name=k, value=v) for k, v in sorted(args["env"].items())),
            startup_check=EasProbe(http_get=health, initial_delay_seconds=0, period_seconds=PROBE_PERIOD_SECONDS,
                                   failure_threshold=-(-probe_budget // PROBE_PERIOD_SECONDS)),
            health_check=EasProbe(http_get=health, initial_delay_seconds=0, period_seconds=PROBE_PERIOD_SECONDS,
                                  failure_threshold=3),
        ),),
        storage=(
            EasStorage(mount_path=mount_path, oss=EasOss(path=uri.rstrip("/") + "/", read_only=True)),
            EasStorage(mount_path="/dev/shm", empty_dir=EasEmptyDir(medium="memory",
                                                                     size_limit=int(args.get("shm_gb", 64)))),
        ),
        unit=EasUnit(size=machines) if machines > 1 else None,
        autoscaler=settings.autoscaler,
    )


def docker_auth_value(credentials: str) -> str:
    """EAS's ``dockerAuth``: the Base64 of ``username:password`` (PAI, "Deploy a model service by using a custom
    image": ``echo -n "abcd:abcde12345" | base64``)."""
    return base64.b64encode(credentials.encode()).decode()


def _with_secrets(config: EasServiceConfig, token: object, docker_auth: object) -> EasServiceConfig:
    return replace(config, token=None if token is None else str(token),
                   docker_auth=None if docker_auth is None else docker_auth_value(str(docker_auth)))
