"""InferenceGateway: Gateway API Gateway + HTTPRoute in front of an InferencePool, for prefix-aware routing.

002 §5.5 recommends an inference gateway for Kimi K3 (1M-token context and prefix caching make routing a
request to the replica that already holds its prefix pay off). What is created, and why:

- ``Gateway`` (``gateway.networking.k8s.io/v1``) of the cluster's internal or public gateway class
  (``LoadBalancerSettings``; GKE: ``gke-l7-rilb`` / ``gke-l7-regional-external-managed``, catalog-research
  §3.3), one HTTP listener admitting routes from its own namespace;
- ``HTTPRoute`` sending every path to the pool;
- the ``InferencePool`` (``inference.networking.k8s.io/v1``, the GA API that gateway-api-inference-extension
  v1.6.0 still owns) and its endpoint picker (EPP), both from the llm-d-router chart (GIE v1.6.0 moved the EPP to
  llm-d/llm-d-router; its last in-tree chart is GIE v1.5.0, catalog-research §3.2):
  ``oci://ghcr.io/llm-d/charts/llm-d-router-gateway`` v0.10.0 with ``router.inferencePool.create: true``. The
  chart names the pool after the release, selects the server's leader pods on the engine's port, points
  ``endpointPickerRef`` at the EPP Service with ``failureMode: FailOpen`` (if the picker is down, the gateway
  still load-balances), and runs the EPP with ``--pool-name <release>`` so that it reads that pool (routerlib
  ``templates/_inferencepool.yaml`` and ``_deployment.yaml``). k3infra does not render a pool of its own: with
  ``create: false`` the chart runs the EPP in standalone mode (``--endpoint-selector``), which starts no
  InferencePool reconciler (llm-d-router v0.10.0 ``cmd/epp/runner/runner.go``: ``startCrdReconcilers :=
  opts.EndpointSelector == nil``), so the picker would never read the pool the gateway routes to; and two
  objects of one name would fight over it. The route and the policies name the chart's pool and wait for the
  chart.

Nothing here waits for the model to load: the Gateway, HTTPRoute, InferencePool and policies are custom resources
pulumi-kubernetes does not await (no ``pulumi.com/waitFor``), and the chart's EPP Deployment, which it does await,
is ready once its datastore has synced the pool, not when the selected pods are (llm-d-router v0.10.0
``cmd/epp/runner/health.go``: readiness is ``datastore.PoolHasSynced()``). Its requests fit one system node
(``EPP_REQUESTS``).

The Gateway API and InferencePool CRDs and the gateway controller come with the cluster where it has its own
(GKE >= 1.34 installs them; an existing cluster may declare its class), as the gateway class does; where the
cloud says it has none (``LoadBalancerSettings.install_gateway``: AKS, EKS, ACK, an existing cluster without one),
the gateway installs agentgateway first (serving.gateway_install) and every child waits for its controller.

A managed gateway health-checks the pool's endpoints and times requests out by its own policy objects, which
the cluster names (``LoadBalancerSettings.gateway_provider``). On GKE (``gke``) nothing else would: GKE checks
``/`` (the engines answer 404 there, so every backend is unhealthy) and cuts a response at 30 s. The gateway
adds, on the InferencePool:

- a ``HealthCheckPolicy`` on the engine's health path and port, at the readiness probe's period, timeout and
  failure count, so the load balancer drops a backend exactly when the kubelet would;
- a ``GCPBackendPolicy`` whose timeout is ``GATEWAY_REQUEST_TIMEOUT_SECONDS`` (catalog), with request logging.

llm-d-router's chart makes the same two with ``provider.name: gke``, but with a fixed 300 s timeout and a 2 s
check (for a fast switch-over between many replicas, while a flapping check on Kimi K3's one replica drops the
only backend); k3infra keeps the chart's provider ``none`` and renders its own, validated against GKE's CRDs
(schemas/crds/gke-*.yaml).
"""

import hashlib
import json
from typing import Any, Mapping, NotRequired, Optional, Sequence, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import GATEWAY_REQUEST_TIMEOUT_SECONDS, KIMI_K3, MODELS, EngineName, Exposure
from ..catalog.charts import AGENTGATEWAY_CLASS, PICKER_CHART
from ..catalog.picker import EPP_CONFIG_FILE, ROLE_LABEL, ROLE_VALUES, precise_prefix_blocker
from . import pods
from .picker import PickerConfig, PickerInputs, k3_picker, picker_problems
from .options import child_options, parent_depends_on
from .chart_source import chart_location
from .contract import LoadBalancerSettings, MetricsAccess
from .gateway_install import install_agentgateway, proxy_network_policy, proxy_parameters
from .server_network_policy import scraper_peers
from ..component_args import reject_unknown

meta = k8s.meta.v1

EPP_CHART, EPP_CHART_VERSION = PICKER_CHART
"""llm-d-router release (2026-08-17); its release charts carry the tag as version and pin the EPP image."""
EPP_REQUESTS = {"cpu": "2", "memory": "4Gi"}
"""The endpoint picker's requests, in place of the chart's 8 CPU / 8 GiB (llm-d-router v0.10.0
``config/charts/routerlib/values.yaml`` L59-65), which no 8-vCPU system node can hold (GKE e2-standard-8 leaves
7,910m allocatable; catalog.system_nodes ``ALLOCATABLE``). llm-d-router v0.10.0 ``docs/operations.md``
sizes the EPP at 0.5-1 CPU per request/s of 100k-token agentic requests (peak 1.19 cores at 5 req/s, 0.26 GiB;
4-6 GiB only at 50-100 req/s); a Kimi K3 pool of a few 8-GPU replicas serves well under 4 req/s of such requests.
The chart's memory limit (16 Gi, no CPU limit) stays: the picker may burst."""
GATEWAY_API = "gateway.networking.k8s.io/v1"
INFERENCE_GROUP = "inference.networking.k8s.io"
INFERENCE_API = f"{INFERENCE_GROUP}/v1"
"""The InferencePool's API: the llm-d-router chart creates the pool, the route and policies name it."""
LISTENER_PORT = 80
GKE_POLICY_API = "networking.gke.io/v1"
PICKER_CONFIG_ANNOTATION = "k3infra.dev/picker-config"
"""The picker pods' annotation holding the SHA-256 of its configuration file."""
CLASS_PROVIDERS = {"istio": "istio"}
"""The llm-d-router chart's ``provider.name`` for a declared gateway class: Istio reaches the picker's TLS port only
through the DestinationRule the chart renders for it (llm-d-router v0.10.0 ``templates/istio.yaml``: ``tls.mode
SIMPLE, insecureSkipVerify``; the picker serves TLS by default, ``pkg/epp/server/options.go`` SecureServing; llm-d
``guides/prereq/gateway-provider/common-configurations/istio.yaml``). Every other class: ``none`` (GKE's policies
are k3infra's own, below; agentgateway reaches the picker over TLS without one)."""
CLASS_CLUSTER_IP_ANNOTATIONS = {"istio": {"networking.istio.io/service-type": "ClusterIP"}}
"""A declared class's Gateway annotation that makes its generated Service a ClusterIP, for an internal endpoint on a
cluster that states no internal client ranges (istio.io docs, Gateway API getting started: "Change the service type
to ClusterIP by annotating the gateway")."""
IN_NAMESPACE_CLASSES = frozenset({"istio"})
"""Declared classes whose proxies run in the Gateway's namespace labelled ``gateway.networking.k8s.io/gateway-name``
(Istio's automated deployment), so the proxies' NetworkPolicy applies to them as to agentgateway's."""
GATEWAY_PROVIDERS = ("gke",)
"""Gateway providers whose policy objects the gateway renders (``LoadBalancerSettings.gateway_provider``)."""


class RoleTarget(TypedDict):
    """One serving role behind the pool (prefill/decode disaggregation): the picker's prefill-filter and
    decode-filter tell the roles apart by the pods' ``llm-d.ai/role`` label (catalog.picker ``ROLE_LABEL``)."""

    name: str
    """The role's name in the stack, e.g. ``prefill``."""
    serves: str
    """``prefill``, ``decode`` or ``prefill-decode`` (catalog.picker ``ROLE_VALUES``)."""
    selector: Mapping[str, str]
    """Labels of the role's HTTP pods: the pool's ``selector`` and ``llm-d.ai/role: <serves>``."""


class InferenceGatewayArgs(TypedDict):
    """Arguments of InferenceGateway."""

    namespace: str
    """Namespace of the gateway, route, pool and endpoint picker (the servers' namespace)."""
    selector: Mapping[str, str]
    """Labels of the pods that serve HTTP (the ModelServer's leaders)."""
    target_port: int
    """The engine's HTTP port on those pods."""
    engine: EngineName
    """vllm or sglang: tells the endpoint picker which metrics to read."""
    load_balancer: LoadBalancerSettings
    """Where the gateway classes come from."""
    exposure: NotRequired[Exposure]
    """internal (default): the internal gateway class; public: the public one."""
    allowed_cidrs: NotRequired[Sequence[str]]
    """Client ranges of a public gateway. An installed gateway (``load_balancer.install_gateway``) enforces them on
    its Service and proxies; a managed gateway class cannot (the cloud's policy must). Default: none."""
    epp_chart_version: NotRequired[str]
    """llm-d-router chart version. Default: v0.10.0."""
    epp_chart_repository: NotRequired[str]
    """Where the llm-d-router chart comes from instead of ghcr.io (an air-gapped cluster's mirror): an oci:// registry
    path or an https chart repository holding ``llm-d-router-gateway``, or a local directory holding it under that
    name (serving.chart_source). Default: ``oci://ghcr.io/llm-d/charts``."""
    health_path: NotRequired[str]
    """The engine's health path, which a managed gateway's health check requests. Default: /health."""
    request_timeout_seconds: NotRequired[int]
    """Longest request (first byte in to last byte of the response) a managed gateway lets through. Default:
    GATEWAY_REQUEST_TIMEOUT_SECONDS (3600, catalog)."""
    roles: NotRequired[Sequence[RoleTarget]]
    """The serving roles the pool's pods hold: a prefill and a decode role turn on the picker's P/D handler (one
    pool over both roles, as llm-d's pd-disaggregation guide deploys it: the picker reads one pool and picks each
    role's endpoint in it by label). Default: one aggregated role (no role label)."""
    model: NotRequired[str]
    """Hugging Face id of the catalog model served: its served name and context size the picker uses. Default:
    Kimi K3."""
    render_url: NotRequired[str]
    """Base URL of the servers' render endpoint (their Service), which the picker tokenizes requests with when it
    scores prefixes from the engines' KV events. Default: none (the picker approximates prefixes)."""
    metrics_access: NotRequired[MetricsAccess]
    """Where the cloud's managed Prometheus scrapes from: the picker's NetworkPolicy admits it on the picker's metrics
    port. Default: the namespace only."""
    api_key: NotRequired[bool]
    """The endpoint checks an API key (the picker then approximates prefixes, catalog.picker
    ``precise_prefix_blocker``). Default: false."""


def _custom_object(name: str, api_version: str, kind: str, metadata: meta.ObjectMetaArgs, spec: Mapping[str, Any],
                   opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """A custom resource whose ``status`` is an output (pulumi_kubernetes' CustomResource exposes none)."""
    return pulumi.CustomResource(
        f"kubernetes:{api_version}:{kind}", name,
        {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": dict(spec), "status": None}, opts)


def _address(status: Any) -> str:
    for a in (status or {}).get("addresses") or []:
        if a.get("value"):
            return a["value"]
    return "pending"


def _checked(args: InferenceGatewayArgs) -> tuple[str, Optional[str], int]:
    """The gateway class of the exposure, the gateway provider and the request timeout, once each is checked."""
    lb = args["load_balancer"]
    public = args.get("exposure") == Exposure.PUBLIC
    key = "public_gateway_class" if public else "internal_gateway_class"
    gateway_class = AGENTGATEWAY_CLASS if lb.get("install_gateway") else lb.get(key)
    if not gateway_class:
        raise pulumi.InputPropertyError(f"load_balancer.{key}", "the cluster names no "
                                        f"{'public' if public else 'internal'} gateway class")
    if not args["selector"]:
        raise pulumi.InputPropertyError("selector", "the pool must select the serving pods")
    if public and lb.get("install_gateway") and not args.get("allowed_cidrs"):
        raise pulumi.InputPropertyError("allowed_cidrs", "a public installed gateway names the client CIDRs its load "
                                        "balancer admits")
    provider = lb.get("gateway_provider")
    if provider is not None and provider not in GATEWAY_PROVIDERS:
        raise pulumi.InputPropertyError("load_balancer.gateway_provider", f"{provider!r} is not a gateway "
                                        f"provider k3infra renders policies for ({', '.join(GATEWAY_PROVIDERS)})")
    timeout = int(args.get("request_timeout_seconds", GATEWAY_REQUEST_TIMEOUT_SECONDS))
    if timeout < 1:
        raise pulumi.InputPropertyError("request_timeout_seconds", f"{timeout}: a timeout is at least 1 second")
    problems = _role_problems(args)
    if problems:
        raise pulumi.InputPropertyError("roles", "; ".join(problems))
    return gateway_class, provider, timeout


def _role_problems(args: InferenceGatewayArgs) -> list[str]:
    """Every role must be a P/D role the picker knows, select a subset of the pool's pods and, when the pool holds
    more than one role, carry its role label (the picker's filters read nothing else)."""
    roles = list(args.get("roles") or ())
    pool = dict(args["selector"])
    out: list[str] = []
    for r in roles:
        if r["serves"] not in ROLE_VALUES:
            out.append(f"role {r['name']!r} serves {r['serves']!r}: one of {', '.join(ROLE_VALUES)}")
        if any(r["selector"].get(k) != v for k, v in pool.items()):
            out.append(f"role {r['name']!r} selects pods outside the pool (its selector lacks {pool})")
        if len(roles) > 1 and r["selector"].get(ROLE_LABEL) != r["serves"]:
            out.append(f"role {r['name']!r} must select {ROLE_LABEL}={r['serves']} (the picker tells roles apart by it)")
    return out


def picker_config(args: InferenceGatewayArgs) -> PickerConfig:
    """The endpoint picker's configuration for these arguments (serving.picker ``k3_picker``), refused with every
    problem the picker would refuse at start (``picker_problems``)."""
    model = MODELS[args.get("model") or KIMI_K3.hf_id]
    engine = EngineName(args["engine"])
    render_url = args.get("render_url") or ""
    blocker = precise_prefix_blocker(engine, bool(args.get("api_key")))
    if not blocker and not render_url:
        blocker = "no render endpoint was given for the picker's tokenizer (render_url)"
    config = k3_picker(PickerInputs(
        engine=engine, model_name=model.served_model_name, namespace=args["namespace"], render_url=render_url,
        context_tokens=model.context_tokens, precise_blocker=blocker,
        roles=[r["serves"] for r in args.get("roles") or ()] or ["prefill-decode"]))
    problems = picker_problems(config)
    if problems:
        raise pulumi.InputPropertyError("engine", "the endpoint picker's configuration: " + "; ".join(problems))
    return config


def _epp_values(args: InferenceGatewayArgs, picker: PickerConfig, gateway_class: str) -> dict[str, Any]:
    """The llm-d-router chart's values: its own InferencePool over the server's leaders and the endpoint picker
    with k3infra's configuration (``router.epp.pluginsCustomConfig``, selected by ``pluginsConfigFile``; the
    chart renders the map into the picker's ConfigMap with ``toYaml``, so the file is a string: JSON, which YAML
    reads)."""
    selector = dict(args["selector"])
    port = int(args["target_port"])
    document = json.dumps(picker.document(), indent=2) + "\n"
    return {
        "provider": {"name": CLASS_PROVIDERS.get(gateway_class, "none")},
        "httpRoute": {"create": False},
        "router": {
            # The chart's pool, named after the release: the EPP then runs with --pool-name (module doc).
            "inferencePool": {"create": True, "failureMode": "FailOpen"},
            "modelServers": {
                "type": str(EngineName(args["engine"])),
                "protocol": "http",
                "targetPorts": [{"number": port}],
                "matchLabels": selector,
            },
            # The picker's /metrics without a service-account token (--metrics-endpoint-auth=false, routerlib
            # _deployment.yaml): the clouds' managed collectors scrape with no Kubernetes credentials.
            "monitoring": {"prometheus": {"auth": {"enabled": False}}},
            "epp": {"image": {"tag": args.get("epp_chart_version") or EPP_CHART_VERSION,
                              "pullPolicy": "IfNotPresent"},
                    "resources": {"requests": dict(EPP_REQUESTS)},
                    # The picker reads its file once, at start (llm-d-router v0.10.0 cmd/epp/runner/runner.go
                    # os.ReadFile): a changed configuration restarts it through its pod template.
                    "podAnnotations": {PICKER_CONFIG_ANNOTATION: hashlib.sha256(document.encode()).hexdigest()},
                    "pluginsConfigFile": EPP_CONFIG_FILE,
                    "pluginsCustomConfig": {EPP_CONFIG_FILE: document}},
        },
    }


def _client_ranges(args: InferenceGatewayArgs) -> list[str]:
    """The ranges an installed gateway's load balancer admits: the public endpoint's allowed CIDRs, or the cluster's
    internal client ranges (none: a ClusterIP, serving.gateway_install ``proxy_service_spec``)."""
    lb = args["load_balancer"]
    if args.get("exposure") == Exposure.PUBLIC:
        return list(args.get("allowed_cidrs") or ())
    return list(lb.get("internal_source_ranges") or ())


def _gateway_spec(gateway_class: str, infrastructure: dict[str, Any] | None) -> dict[str, Any]:
    """The Gateway: one HTTP listener admitting routes from its namespace, and an installed gateway's
    ``infrastructure`` (``_installed_infrastructure``)."""
    spec: dict[str, Any] = {
        "gatewayClassName": gateway_class,
        "listeners": [{"name": "http", "protocol": "HTTP", "port": LISTENER_PORT,
                       "allowedRoutes": {"namespaces": {"from": "Same"}}}],
    }
    if infrastructure:
        spec["infrastructure"] = infrastructure
    return spec


def _installed_infrastructure(args: InferenceGatewayArgs, name: str, labels: dict[str, str],
                              opts: pulumi.ResourceOptions) -> tuple[dict[str, Any], pulumi.Resource]:
    """An installed gateway's ``spec.infrastructure``: the exposure's load-balancer annotations for its Service, and
    the parameters that give it the client ranges (serving.gateway_install); and those parameters."""
    public = args.get("exposure") == Exposure.PUBLIC
    lb = args["load_balancer"]
    annotations = dict(lb.get("public_annotations") or {}) if public else dict(lb["internal_annotations"])
    ranges = _client_ranges(args)
    ref, params = proxy_parameters(name, args["namespace"], labels, ranges, opts)
    return {**({"annotations": annotations} if annotations and ranges else {}), "parametersRef": ref}, params


def _declared_annotations(args: InferenceGatewayArgs, gateway_class: str) -> dict[str, str] | None:
    """A declared class's Gateway annotations: its ClusterIP one for an internal endpoint where the cluster states no
    internal client ranges (``CLASS_CLUSTER_IP_ANNOTATIONS``)."""
    if args["load_balancer"].get("install_gateway") or args.get("exposure") == Exposure.PUBLIC \
            or _client_ranges(args):
        return None
    return dict(CLASS_CLUSTER_IP_ANNOTATIONS.get(gateway_class) or {}) or None


def _proxy_policy(args: InferenceGatewayArgs, name: str, labels: dict[str, str], opts: pulumi.ResourceOptions) -> None:
    """The gateway's in-namespace proxies (installed, or a declared class in ``IN_NAMESPACE_CLASSES``) admit the
    namespace, the load balancer's clients and, where the cloud's checks probe pods
    (``load_balancer.health_check_ranges``), its health checks, on the listener's port."""
    ranges = _client_ranges(args)
    if ranges:
        ranges += list(args["load_balancer"].get("health_check_ranges") or ())
    proxy_network_policy(name, args["namespace"], labels, LISTENER_PORT, ranges, opts)


PICKER_PORTS = ("grpc", "grpc-health", "metrics")
"""The picker container's named ports (llm-d-router v0.10.0 routerlib ``_deployment.yaml``: ``grpc`` 9002, the
gateway's ext-proc calls; ``grpc-health`` 9003; ``metrics`` 9090)."""


def _picker_policy(args: InferenceGatewayArgs, name: str, labels: Mapping[str, str], selector: Mapping[str, str],
                   opts: pulumi.ResourceOptions) -> None:
    """Ingress to the picker's pods (the chart makes no policy; its metrics take no token): every port from the
    namespace (the in-namespace proxies' ext-proc calls), the ext-proc and health ports from a managed gateway's proxy
    and health-check ranges, the metrics port from the cloud's collectors (the independent review of issue 38,
    m1). Rendered only where the gateway's proxies are known to reach the picker from there (the constructor)."""
    net = k8s.networking.v1
    lb = args["load_balancer"]

    def ports(*names: str) -> list[net.NetworkPolicyPortArgs]:
        return [net.NetworkPolicyPortArgs(protocol="TCP", port=n) for n in names]

    rules = [net.NetworkPolicyIngressRuleArgs(from_=[net.NetworkPolicyPeerArgs(pod_selector=meta.LabelSelectorArgs())],
                                              ports=ports(*PICKER_PORTS))]
    managed = [*(lb.get("gateway_source_ranges") or ()), *(lb.get("health_check_ranges") or ())]
    if managed and not lb.get("install_gateway"):
        rules.append(net.NetworkPolicyIngressRuleArgs(
            from_=[net.NetworkPolicyPeerArgs(ip_block=net.IPBlockArgs(cidr=c)) for c in dict.fromkeys(managed)],
            ports=ports("grpc", "grpc-health")))
    peers = scraper_peers(args.get("metrics_access") or MetricsAccess())
    if peers:
        rules.append(net.NetworkPolicyIngressRuleArgs(from_=peers, ports=ports("metrics")))
    net.NetworkPolicy(f"{name}-picker-network-policy",
                      metadata=meta.ObjectMetaArgs(name=f"{name}-picker", namespace=args["namespace"], labels=dict(labels)),
                      spec=net.NetworkPolicySpecArgs(pod_selector=meta.LabelSelectorArgs(match_labels=dict(selector)),
                                                     policy_types=["Ingress"], ingress=rules),
                      opts=opts)


def _route(name: str, ns: str, labels: Mapping[str, str], pool_name: str, opts: pulumi.ResourceOptions) -> None:
    """The HTTPRoute sending every path to the InferencePool."""
    k8s.apiextensions.CustomResource(
        f"{name}-route",
        api_version=GATEWAY_API,
        kind="HTTPRoute",
        metadata=meta.ObjectMetaArgs(name=name, namespace=ns, labels=labels),
        spec={
            "parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": name}],
            "rules": [{
                "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                "backendRefs": [{"group": INFERENCE_GROUP, "kind": "InferencePool",
                                 "name": pool_name}],
            }],
        },
        opts=opts,
    )


class InferenceGateway(pulumi.ComponentResource):
    """Gateway + HTTPRoute + InferencePool + endpoint picker in front of a ModelServer."""

    endpoint: pulumi.Output[str]
    """Base URL of the gateway (``http://ADDRESS``; OpenAI routes under ``/v1``)."""
    pool_name: pulumi.Output[str]
    """Name of the InferencePool (for cloud policy objects that target it)."""
    gateway_name: pulumi.Output[str]
    """Name of the Gateway."""

    def __init__(self, name: str, args: InferenceGatewayArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("k3infra:index:InferenceGateway", name, None, opts)
        reject_unknown(args, InferenceGatewayArgs)
        gateway_class, provider, timeout = _checked(args)
        picker = picker_config(args)
        ns = args["namespace"]
        inherited = parent_depends_on(opts)
        child = child_options(self, inherited)
        labels = pods.labels(name, "inference-gateway")
        port = int(args["target_port"])
        epp_release = name
        installed = bool(args["load_balancer"].get("install_gateway"))
        if installed:
            inherited = [*inherited, install_agentgateway(name, child_options(self, []))[-1]]
            child = child_options(self, inherited)
        epp = k8s.helm.v4.Chart(
            f"{name}-epp",
            **chart_location((EPP_CHART, args.get("epp_chart_version") or EPP_CHART_VERSION),
                             args.get("epp_chart_repository")),
            namespace=ns,
            name=epp_release,
            values=_epp_values(args, picker, gateway_class),
            opts=child,
        )
        pool_name = epp_release
        infrastructure, params = _installed_infrastructure(args, name, dict(labels), child) if installed else (None, None)
        gateway = _custom_object(
            f"{name}-gateway", GATEWAY_API, "Gateway",
            meta.ObjectMetaArgs(name=name, namespace=ns, labels=labels,
                                annotations=_declared_annotations(args, gateway_class)),
            _gateway_spec(gateway_class, infrastructure), child_options(self, inherited, *([params] if params else [])),
        )
        _route(name, ns, labels, pool_name, child_options(self, inherited, gateway, epp))
        picker_selector = {"llm-d-router-gateway": f"{epp_release.lower().strip()[:40]}-epp"}
        if installed or gateway_class in IN_NAMESPACE_CLASSES:
            _proxy_policy(args, name, dict(labels), child)
        # Where the proxies that call the picker are known (in the namespace, or GKE's proxy-only subnet); a declared
        # class's may run in a namespace of their own, which a policy here would cut off (the pool fails open).
        if installed or gateway_class in IN_NAMESPACE_CLASSES or provider == "gke":
            _picker_policy(args, name, labels, picker_selector, child_options(self, inherited, epp))
        if provider == "gke":
            _gke_policies(pool_name, ns, labels, port, args.get("health_path", "/health"), timeout,
                          child_options(self, inherited, epp))
        # Plain attributes, not outputs (so not in the multi-language schema): what the plan says about the picker's
        # profile (why it approximates prefixes), and its pods' labels (routerlib _helpers.tpl: the release
        # lower-cased and cut at 40, then "-epp"), whose port ``metrics`` (9090) serves its Prometheus metrics.
        self.picker_notes: tuple[str, ...] = picker.notes
        self.picker_selector: dict[str, str] = picker_selector
        self.pool_name = pulumi.Output.from_input(pool_name)
        self.gateway_name = pulumi.Output.from_input(name)
        self.endpoint = gateway.status.apply(  # pyright: ignore[reportAttributeAccessIssue]
            lambda s: f"http://{_address(s)}")
        self.register_outputs({"endpoint": self.endpoint, "pool_name": self.pool_name,
                               "gateway_name": self.gateway_name})


def _gke_policies(pool: str, ns: str, labels: Mapping[str, str], port: int, health_path: str, timeout: int,
                  opts: pulumi.ResourceOptions) -> None:
    """GKE's HealthCheckPolicy and GCPBackendPolicy on the InferencePool ``pool`` (module docstring)."""
    target = {"group": INFERENCE_GROUP, "kind": "InferencePool", "name": pool}
    metadata = meta.ObjectMetaArgs(name=pool, namespace=ns, labels=dict(labels))
    k8s.apiextensions.CustomResource(
        f"{pool}-health-check", api_version=GKE_POLICY_API, kind="HealthCheckPolicy", metadata=metadata,
        spec={"targetRef": target, "default": {
            "checkIntervalSec": pods.READINESS_PERIOD_SECONDS,
            "timeoutSec": pods.PROBE_TIMEOUT_SECONDS,
            "healthyThreshold": 1,
            "unhealthyThreshold": pods.READINESS_FAILURES,
            # USE_FIXED_PORT with the port: the CRD's rules accept it whichever way portSpecification defaults.
            "config": {"type": "HTTP", "httpHealthCheck": {
                "portSpecification": "USE_FIXED_PORT", "port": port, "requestPath": health_path}},
        }},
        opts=opts)
    k8s.apiextensions.CustomResource(
        f"{pool}-backend-policy", api_version=GKE_POLICY_API, kind="GCPBackendPolicy", metadata=metadata,
        spec={"targetRef": target, "default": {"timeoutSec": timeout, "logging": {"enabled": True}}},
        opts=opts)
