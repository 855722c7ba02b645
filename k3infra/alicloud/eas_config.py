"""The PAI-EAS service configuration as typed objects, serialised deterministically.

``pai.Service`` takes the service definition as one JSON string (cloud-api.md §9). Building it from frozen
dataclasses keeps a misspelt key from reaching EAS unnoticed (the type checker sees every field), and
``to_json`` sorts keys so the same stack always produces the same string (no diff in `pulumi preview`).

Field names follow the EAS JSON reference ("Parameters of model services", alibabacloud.com/help/pai/user-guide/
parameters-of-model-services) and the pai-python-sdk's builders (aliyun/pai-python-sdk pai/model/_model.py:
``storage[].oss.path``/``readOnly``, ``containers[].script``/``port``/``env``). Marked UNCONFIRMED where only
third-party code shows the key: ``unit.size`` (machines per instance of a distributed service), the Lingjun
``metadata.quota_id``/``quota_type``, the placement of ``rolling_strategy`` under ``metadata``, and the probe keys
``startup_check``/``health_check``; the official
"Multi-machine distributed inference" page confirms the Unit concept and ``RANK_ID``, and the "Health check"
page confirms startup and readiness probes with ``http_get``.
"""

import json
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any


def _plain(value: Any) -> Any:
    """Dataclasses to dicts (JSON names from field metadata, None dropped), tuples to lists."""
    if is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in fields(value):
            v = getattr(value, f.name)
            if v is None:
                continue
            out[f.metadata.get("json", f.name)] = _plain(v)
        return out
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class EasEnvVar:
    """One container environment variable."""

    name: str
    value: str


@dataclass(frozen=True)
class EasHttpGet:
    """An HTTP GET probe target."""

    path: str
    port: int


@dataclass(frozen=True)
class EasProbe:
    """A Kubernetes-style probe (EAS "Health check": liveness, readiness and startup probes with http_get)."""

    http_get: EasHttpGet
    initial_delay_seconds: int
    period_seconds: int
    failure_threshold: int
    timeout_seconds: int = 10
    success_threshold: int = 1


@dataclass(frozen=True)
class EasContainer:
    """The serving container: image, the command (``script``, run by a shell), port and environment."""

    image: str
    script: str
    port: int
    env: tuple[EasEnvVar, ...] = ()
    startup_check: EasProbe | None = None
    """Holds liveness and readiness back until the model is loaded (UNCONFIRMED key name)."""
    health_check: EasProbe | None = None
    """Readiness: traffic reaches the instance only while it passes (UNCONFIRMED key name)."""


@dataclass(frozen=True)
class EasOss:
    """An OSS directory mounted into the container."""

    path: str
    """``oss://bucket/dir/``."""
    read_only: bool = field(default=True, metadata={"json": "readOnly"})
    """Mount read-only (JSON ``readOnly``)."""

    def __post_init__(self) -> None:
        if not self.path.startswith("oss://"):
            raise ValueError(f"an EAS OSS mount takes an oss:// path, got {self.path!r}")


@dataclass(frozen=True)
class EasEmptyDir:
    """A scratch or memory volume (``medium: memory`` for /dev/shm; size in GB)."""

    medium: str | None = None
    size_limit: int | None = None


@dataclass(frozen=True)
class EasStorage:
    """One mount: an OSS directory or an empty dir, at ``mount_path``."""

    mount_path: str
    oss: EasOss | None = None
    empty_dir: EasEmptyDir | None = None

    def __post_init__(self) -> None:
        if (self.oss is None) == (self.empty_dir is None):
            raise ValueError("an EAS storage entry mounts exactly one of oss or empty_dir")


@dataclass(frozen=True)
class EasNetworking:
    """VPC direct connection: the instances get addresses in this vSwitch (002 §6.2: VPC configuration is
    mandatory for distributed deployment)."""

    vpc_id: str
    vswitch_id: str
    security_group_id: str


@dataclass(frozen=True)
class EasCloud:
    """Where the instances attach."""

    networking: EasNetworking


@dataclass(frozen=True)
class EasRollingStrategy:
    """How an update replaces the service's instances (PAI "Rolling update and graceful shutdown":
    ``rolling_strategy.max_surge``, extra instances started beside the old ones, default 2% and at least 1;
    ``rolling_strategy.max_unavailable``, old instances stopped before the new ones are ready). A distributed
    service rolls by unit ("Multi-machine distributed inference": the new Unit starts beside the old)."""

    max_surge: int
    """New instances (units) started beside the old ones."""
    max_unavailable: int
    """Old instances (units) stopped before their replacements are ready."""

    def __post_init__(self) -> None:
        if self.max_surge < 0 or self.max_unavailable < 0 or self.max_surge == self.max_unavailable == 0:
            raise ValueError("a rolling update surges or stops at least one instance, and neither count is negative")


@dataclass(frozen=True)
class EasMetadata:
    """The service's identity and resources: per instance (one machine) CPU, memory in MB and GPUs, on a
    dedicated resource group (``resource``) or a Lingjun quota (``quota_id`` with ``quota_type``)."""

    name: str
    instance: int
    """Instances of the service; with a unit, the number of units (replicas). UNCONFIRMED for units."""
    cpu: int
    memory: int
    """MB."""
    gpu: int
    workspace_id: str | None = None
    resource: str | None = None
    """EAS dedicated resource group (eas-r-...)."""
    quota_id: str | None = None
    """Lingjun resource quota (quota...) (UNCONFIRMED key)."""
    quota_type: str | None = None
    """``Lingjun`` with a quota (UNCONFIRMED key)."""
    resource_burstable: bool = False
    """Never overflow onto shared public resources."""
    rolling_strategy: EasRollingStrategy | None = None
    """How an update replaces instances; EAS's default surges. The key names are the "Rolling update and graceful
    shutdown" page's; their place under ``metadata`` is UNCONFIRMED (third-party EAS service JSONs put it there)."""

    def __post_init__(self) -> None:
        if (self.resource is None) == (self.quota_id is None):
            raise ValueError("an EAS service runs on exactly one of a resource group or a Lingjun quota")
        if self.quota_id is not None and (self.quota_type is None or self.workspace_id is None):
            raise ValueError("a Lingjun quota needs quota_type and the workspace it is granted to")


@dataclass(frozen=True)
class EasUnit:
    """Machines per instance of a distributed service (each machine gets ``RANK_ID`` 0..size-1; rank 0 takes
    the traffic). UNCONFIRMED key: ``unit.size`` comes from third-party EAS code."""

    size: int


@dataclass(frozen=True)
class EasScaleStrategy:
    """One metric the autoscaler follows: scale out when the per-instance average exceeds ``threshold``."""

    metric_name: str = field(metadata={"json": "metricName"})
    """``qps`` (requests per second per instance), ``cpu`` or ``gpu`` (utilization, percent)."""
    threshold: float

    def __post_init__(self) -> None:
        if self.metric_name not in ("qps", "cpu", "gpu") or self.threshold <= 0:
            raise ValueError("an EAS scale strategy follows qps, cpu or gpu with a positive threshold")


@dataclass(frozen=True)
class EasStabilization:
    """How long the metric must hold before the autoscaler acts."""

    stabilization_window_seconds: int = field(metadata={"json": "stabilizationWindowSeconds"})


@dataclass(frozen=True)
class EasOnZero:
    """Scale-to-zero: how long the service idles at the floor before its last instance goes."""

    scale_down_grace_period_seconds: int = field(metadata={"json": "scaleDownGracePeriodSeconds"})


@dataclass(frozen=True)
class EasScalingBehavior:
    """Delays of scale-out, scale-in and scale-to-zero."""

    scale_up: EasStabilization = field(metadata={"json": "scaleUp"})
    scale_down: EasStabilization = field(metadata={"json": "scaleDown"})
    on_zero: EasOnZero | None = field(default=None, metadata={"json": "onZero"})


@dataclass(frozen=True)
class EasAutoscaler:
    """Horizontal auto scaling of the service, in the body of the EAS API's CreateServiceAutoScaler (``min``,
    ``max``, ``scaleStrategies[].metricName``/``threshold``, ``behavior.scaleUp``/``scaleDown``
    ``.stabilizationWindowSeconds``, ``behavior.onZero.scaleDownGracePeriodSeconds``). pulumi-alicloud 4.0 has no
    autoscaler resource (``pai.Service`` takes only the service JSON), so it rides in the service definition as
    ``autoscaler``: that key is UNCONFIRMED (no stored EAS page shows the service JSON's section; the field names
    are the API's). ``gpu`` is the console's GPU-utilization metric (PAI "Horizontal auto scaling"); the API page lists
    qps and cpu."""

    min: int
    max: int
    scale_strategies: tuple[EasScaleStrategy, ...] = field(metadata={"json": "scaleStrategies"})
    behavior: EasScalingBehavior

    def __post_init__(self) -> None:
        if self.min < 0 or self.max < max(1, self.min) or not self.scale_strategies:
            raise ValueError("an EAS autoscaler scales between 0 <= min <= max (max at least 1) on one metric or more")
        if (self.min == 0) != (self.behavior.on_zero is not None):
            raise ValueError("scale-to-zero (min 0) and behavior.onZero go together")


@dataclass(frozen=True)
class EasServiceConfig:
    """The whole service definition."""

    metadata: EasMetadata
    cloud: EasCloud
    containers: tuple[EasContainer, ...]
    storage: tuple[EasStorage, ...] = ()
    unit: EasUnit | None = None
    token: str | None = None
    """Bearer token callers present; EAS generates one when absent."""
    autoscaler: EasAutoscaler | None = None
    """Horizontal auto scaling (None: a fixed ``metadata.instance``)."""
    docker_auth: str | None = field(default=None, metadata={"json": "dockerAuth"})
    """Base64 of ``username:password`` for a registry that needs credentials (JSON ``dockerAuth``, PAI "Service
    deployment via JSON")."""

    def __post_init__(self) -> None:
        if not self.containers:
            raise ValueError("an EAS service runs at least one container")
        if self.unit is not None and self.unit.size < 2:
            raise ValueError("a unit spans at least two machines; leave it out for one")

    def to_dict(self) -> dict[str, Any]:
        """The JSON object EAS reads."""
        out = _plain(self)
        assert isinstance(out, dict)
        return out

    def to_json(self) -> str:
        """Deterministic JSON: sorted keys, no insignificant whitespace."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
