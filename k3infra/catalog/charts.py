"""The pods and webhooks of every Helm chart k3infra installs, at the pinned version: what each requests, where it
runs and which admission webhooks it serves.

A chart's pods are not rendered offline (Pulumi's Helm v4 Chart renders them while it runs), so what they ask of
the nodes is recorded here from each chart's default values at its pinned version; k3infra's own values override
the requests where ``ChartPod.resources_value`` says. The system-pool fit test checks every chart and workload a
stack renders for the CPU system nodes against ``catalog.system_nodes.ALLOCATABLE``.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .capabilities import ANY_KUBERNETES, Capability as C, KubernetesRange, VersionFacts, facts


@dataclass(frozen=True)
class ChartPod:
    """One workload of a chart, as its default values make it."""

    component: str
    kind: str
    """Deployment or DaemonSet (one pod on each node it selects)."""
    replicas: int
    """Pods of a Deployment (1 for a DaemonSet)."""
    cpu_millis: int
    """CPU request of the pod's containers by default (0: the chart sets none)."""
    memory_mib: int
    """Memory request of the pod's containers by default (0: the chart sets none)."""
    resources_value: str
    """The values path of the component's ``resources`` (``""``: not settable)."""
    gpu_nodes_only: str = ""
    """Why the pods never run on the CPU system nodes (``""``: they may)."""
    placed_by_value: str = ""
    """The values path k3infra sets to keep the pods on the GPU nodes (``""``: the chart's own default does)."""
    enabled_by: tuple[str, ...] = ()
    """Values paths of which one must be true for the chart to run it (empty: always)."""


@dataclass(frozen=True)
class ChartWebhook:
    """One admission webhook a chart registers: the API server calls its Service, which sends to a pod port."""

    name: str
    service: str
    service_port: int
    target_port: int
    """The pod port the API server's call reaches on a node: what a firewall between them must admit."""
    failure_policy: str
    """``Fail``: an unreachable webhook refuses every object it intercepts."""
    intercepts: str
    enabled_by: tuple[str, ...] = ()
    """Values paths of which one must be true for the chart to register it (empty: always)."""
    disabled_by: str = ""
    """A values path that, when true, leaves it out."""


@dataclass(frozen=True)
class ChartFacts:
    """A pinned chart, its pods, what its version supports and the webhooks it serves."""

    chart: str
    version: str
    """The version k3infra pins (``""``: a local chart pinned by a commit)."""
    source: str
    pods: tuple[ChartPod, ...]
    supports: VersionFacts
    """The Kubernetes minors this version supports and the capabilities a stack may use from it
    (catalog.capabilities)."""
    webhooks: tuple[ChartWebhook, ...] = ()
    webhook_source: str = ""
    """Where the webhooks (or that there are none) were read: the chart's templates at the pinned version."""


def _lws(name: str, intercepts: str, *enabled_by: str) -> ChartWebhook:
    """A webhook of LWS v0.10.0: Service lws-webhook-service, 443 to targetPort 9443, failurePolicy Fail."""
    return ChartWebhook(name, "lws-webhook-service", 443, 9443, "Fail", intercepts, enabled_by=enabled_by)


def _alb(name: str, failure_policy: str, intercepts: str, enabled_by: tuple[str, ...] = (),
         disabled_by: str = "") -> ChartWebhook:
    """A webhook of the AWS Load Balancer Controller chart 1.13.2: its webhook Service, 443 to 9443."""
    return ChartWebhook(name, "aws-load-balancer-webhook-service", 443, 9443, failure_policy, intercepts,
                        enabled_by=enabled_by, disabled_by=disabled_by)


def _keda(name: str, intercepts: str) -> ChartWebhook:
    """A validating webhook of KEDA chart 2.20.2: Service keda-admission-webhooks, 443 to 9443, failurePolicy Ignore
    (values.yaml ``webhooks.failurePolicy``)."""
    return ChartWebhook(name, "keda-admission-webhooks", 443, 9443, "Ignore", intercepts)


CLUSTER_AUTOSCALER = "cluster-autoscaler"
CLUSTER_AUTOSCALER_CHARTS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "1.34": (CLUSTER_AUTOSCALER, "9.53.0"),
    "1.35": (CLUSTER_AUTOSCALER, "9.59.0"),
})
"""kubernetes/autoscaler's chart (https://kubernetes.github.io/autoscaler) by the cluster's Kubernetes minor: EKS scales
the weight sync's node group with it (k3infra.aws.sync_pool). Its image is the chart's appVersion, and the autoscaler
supports the control plane minor it was built for only (cluster-autoscaler README, "Releases": "We recommend using
Cluster Autoscaler with the Kubernetes control plane ... version for which it was meant"), so the chart follows the
cluster: 9.53.0 runs 1.34.2 (HyperPod's newest minor), 9.59.0 runs 1.35.0. Both carry #8047, without which a
HyperPod instance's provider id aborts the autoscaler's loop (#7540)."""

_CA_SOURCE = ("kubernetes/autoscaler tag cluster-autoscaler-chart-{chart} ({commit}) Chart.yaml appVersion {app}, "
              "values.yaml image.tag v{app}; #8047 (merge 9cdcc284ea, \"AWSCloudProvider should ignore unrecognized "
              "provider IDs\": NodeGroupForNode skips them) is in cluster-autoscaler-1.33.0 and later (HasInstance still "
              "errors on them up to 1.36.1, which clusterstate.go only logs as a warning, counting the node present; "
              "#9801 is unmerged); {sdk}")


def _cluster_autoscaler(chart: str, commit: str, app: str, sdk: str) -> VersionFacts:
    minor = ".".join(app.split(".")[:2])
    return facts(KubernetesRange(minor, minor, "cluster-autoscaler README, Releases: the control plane minor it was "
                                 "built for"), _CA_SOURCE.format(chart=chart, commit=commit, app=app, sdk=sdk),
                 C.IRSA, C.EKS_POD_IDENTITY, C.HYPERPOD_PROVIDER_IDS, reads_provider_ids=True)


KEDA_CHART = ("keda", "2.20.2")
"""KEDA's chart (https://kedacore.github.io/charts) at the release whose CRDs schemas/crds vendors."""

AGENTGATEWAY_CHART = ("oci://cr.agentgateway.dev/charts/agentgateway", "v1.0.0")
"""agentgateway's control plane (Gateway API + Inference Extension), where the cluster has no inference gateway
(serving.gateway_install): llm-d/llm-d 09df9e5 ``guides/prereq/gateway-provider/README.md``: "installs the
``agentgateway`` v1.0.0 control plane and data plane. This is the preferred self-installed inference path"; the
release charts carry the tag as version (llm-d ``agentgateway.helmfile.yaml``: ``version: v1.0.0-alpha.4``)."""
AGENTGATEWAY_CRDS_CHART = ("oci://cr.agentgateway.dev/charts/agentgateway-crds", "v1.0.0")
"""agentgateway's own CRDs (AgentgatewayBackend, AgentgatewayParameters, AgentgatewayPolicy), installed first
(llm-d ``agentgateway.helmfile.yaml``: ``needs: agentgateway-system/agentgateway-crds``)."""
AGENTGATEWAY_CLASS = "agentgateway"
"""The GatewayClass agentgateway's controller creates and reconciles (agentgateway v1.0.0 (commit 50e5fb6)
``controller/install/helm/agentgateway/values.yaml`` ``gatewayClassParametersRefs``: "The default GatewayClasses
managed by kgateway are: - agentgateway"; llm-d's guides name it: "Both self-installed inference modes use the
``agentgateway`` GatewayClass")."""
GATEWAY_API_CRDS = "https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.6.1/standard-install.yaml"
"""Gateway API's standard channel at the release schemas/crds vendors (v1.6.1): what agentgateway needs first
(llm-d ``install-gateway-provider-dependencies.sh`` applies Gateway API ``config/crd`` at v1.5.1; k3infra keeps the
vendored v1.6.1, whose standard channel serves the same v1 Gateway and HTTPRoute)."""
INFERENCE_CRDS = ("https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/v1.6.0/"
                  "manifests.yaml")
"""The Inference Extension's CRDs (InferencePool v1) at the release schemas/crds vendors (v1.6.0), which the
llm-d-router chart's pool needs (llm-d's script applies v1.4.0-rc.3; the release asset's name is the one GAIE's
guides apply for v1.0.x to v1.6.2: UNCONFIRMED for v1.6.0 itself)."""
_AGW_SOURCE = "agentgateway/agentgateway v1.0.0 (commit 50e5fb6) controller/install/helm/"

PICKER_CHART = ("oci://ghcr.io/llm-d/charts/llm-d-router-gateway", "v0.10.0")
"""The InferencePool and its endpoint picker (serving.gateway): llm-d-router v0.10.0 (2026-08-17), whose release
charts carry the tag as version (``hack/push-chart.sh``: ``helm package --version ${EXTRA_TAG}``)."""
LWS_CHART = ("oci://registry.k8s.io/lws/charts/lws", "0.10.0")
"""The LeaderWorkerSet controller (docs/catalog-research.md §3.1); its CRDs (``crds/``) match
schemas/crds/lws-leaderworkersets.yaml (v0.10.0)."""
MIRRORABLE_CHARTS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "llm-d-router-gateway": PICKER_CHART,
    "lws": LWS_CHART,
})
"""The pinned charts a stack may take from a mirror (``k3infra:charts.<name>.repository``), by chart name (the
reference's last path segment, the ``name`` of its Chart.yaml)."""


def chart_name(reference: str) -> str:
    """A chart reference's name: its last path segment (``oci://ghcr.io/llm-d/charts/llm-d-router-gateway``:
    ``llm-d-router-gateway``; a repository chart's name is the reference itself)."""
    return reference.rstrip("/").rsplit("/", 1)[-1]


KUBE_STATE_METRICS_CHART = ("kube-state-metrics", "7.0.1")
"""prometheus-community's kube-state-metrics chart (https://prometheus-community.github.io/helm-charts; app
v2.17.0): the HPA series of the scaler's alerts where no managed kube-state-metrics exports them (EKS)."""

_CHARTS = (
    ChartFacts(KUBE_STATE_METRICS_CHART[0], KUBE_STATE_METRICS_CHART[1],
               "prometheus-community/helm-charts charts/kube-state-metrics (Chart.yaml 7.0.1 at 09707f6; values.yaml "
               "b1e058b, templates/deployment.yaml 6bcbca5): replicas 1, resources {} (no requests by default), "
               "container port http 8080, selector labels app.kubernetes.io/name and app.kubernetes.io/instance (the "
               "release)", (ChartPod("kube-state-metrics", "Deployment", 1, 0, 0, "resources"),),
               supports=facts(KubernetesRange(None, None, "kubernetes/kube-state-metrics README, Versioning: the "
                                              "supported Kubernetes version is client-go's, other minors best effort"),
                              "reads Kubernetes objects only; no cloud identity"),
               webhook_source="prometheus-community/helm-charts charts/kube-state-metrics/templates: a Deployment (or "
                              "StatefulSet, DaemonSet), RBAC, Service, ServiceMonitor; no webhook configuration or "
                              "APIService"),
    ChartFacts(AGENTGATEWAY_CHART[0], AGENTGATEWAY_CHART[1],
               _AGW_SOURCE + "agentgateway/values.yaml: controller.replicaCount 1, resources {} (no requests); the "
               "data plane's proxies are per Gateway, made by the controller in the Gateway's namespace",
               (ChartPod("controller", "Deployment", 1, 0, 0, "resources"),),
               supports=facts(ANY_KUBERNETES, "no cloud identity",
                              unconfirmed="no kubeVersion in agentgateway v1.0.0 Chart.yaml"),
               webhook_source=_AGW_SOURCE + "agentgateway/templates: deployment, service, serviceaccount, role, "
                              "HPA, PDB, VPA; no webhook configuration or APIService"),
    ChartFacts(AGENTGATEWAY_CRDS_CHART[0], AGENTGATEWAY_CRDS_CHART[1],
               _AGW_SOURCE + "agentgateway-crds/templates: three CustomResourceDefinitions, no workload", (),
               supports=facts(ANY_KUBERNETES, "no cloud identity",
                              unconfirmed="no kubeVersion in agentgateway-crds v1.0.0 Chart.yaml"),
               webhook_source=_AGW_SOURCE + "agentgateway-crds/templates: CRDs only"),
    ChartFacts(KEDA_CHART[0], KEDA_CHART[1],
               "kedacore/charts cbb9bb8 (prepare v2.20.2) keda/values.yaml: operator, metricsServer and webhooks "
               "replicaCount 1, resources.requests cpu 100m, memory 100Mi each",
               (ChartPod("operator", "Deployment", 1, 100, 100, "resources.operator"),
                ChartPod("metrics-apiserver", "Deployment", 1, 100, 100, "resources.metricServer"),
                ChartPod("admission-webhooks", "Deployment", 1, 100, 100, "resources.webhooks")),
               supports=facts(KubernetesRange("1.33", "1.35", "keda.sh/docs/2.20/operate/cluster, Kubernetes "
                                              "Compatibility: v2.20 tested on v1.33 - v1.35"),
                              "kedacore/keda v2.20.2 pkg/scalers/aws/aws_config_cache.go: the AWS SDK v2 default "
                              "credential chain (EKS Pod Identity, IRSA)", C.EKS_POD_IDENTITY, C.IRSA),
               webhooks=(_keda("vscaledobject.kb.io", "scaledobjects CREATE/UPDATE"),
                         _keda("vscaledjob.kb.io", "scaledjobs CREATE/UPDATE"),
                         _keda("vstriggerauthentication.kb.io", "triggerauthentications CREATE/UPDATE"),
                         _keda("vsclustertriggerauthentication.kb.io", "clustertriggerauthentications CREATE/UPDATE"),
                         _keda("vcloudeventsource.kb.io", "cloudeventsources CREATE/UPDATE"),
                         _keda("vclustercloudeventsource.kb.io", "clustercloudeventsources CREATE/UPDATE"),
                         ChartWebhook("v1beta1.external.metrics.k8s.io (APIService)", "keda-operator-metrics-apiserver",
                                      443, 6443, "Fail", "the HPA's external metrics: unreachable, no ScaledObject "
                                      "scales", enabled_by=("metricsServer.enabled",))),
               webhook_source="kedacore/charts cbb9bb8 keda/templates/webhooks/validatingconfiguration.yaml (six "
                              "webhooks, failurePolicy webhooks.failurePolicy, default Ignore), webhooks/service.yaml "
                              "(443 to webhooks.port, default 9443), metrics-server/apiservice.yaml and service.yaml "
                              "(the APIService's Service, service.portHttps 443 to portHttpsTarget 6443; "
                              "metricsServer.enabled default true)"),
    ChartFacts(LWS_CHART[0], LWS_CHART[1],
               "kubernetes-sigs/lws v0.10.0 charts/lws/values.yaml: replicaCount 1, resources.requests cpu 1, "
               "memory 1Gi", (ChartPod("controller-manager", "Deployment", 1, 1000, 1024, "resources"),),
               supports=facts(KubernetesRange("1.26", None, "kubernetes-sigs/lws v0.10.0 site/content/en/docs/"
                                              "installation/_index.md: \"version >= 1.26 is Required\""),
                              "no cloud identity"),
               webhooks=(_lws("mleaderworkerset.kb.io", "leaderworkersets CREATE/UPDATE"),
                         _lws("mpod.kb.io", "pods CREATE with label leaderworkerset.sigs.k8s.io/name"),
                         _lws("vleaderworkerset.kb.io", "leaderworkersets CREATE/UPDATE"),
                         _lws("vpod.kb.io", "pods CREATE/UPDATE with label leaderworkerset.sigs.k8s.io/name"),
                         _lws("vdisaggregatedset.kb.io", "disaggregatedsets CREATE/UPDATE", "enableDisaggregatedSet")),
               webhook_source="kubernetes-sigs/lws v0.10.0 (commit 2161f38f) charts/lws/templates/webhook/webhook.yaml "
                              "(failurePolicy: Fail on all five; vdisaggregatedset only if enableDisaggregatedSet, "
                              "values.yaml default false), webhook/service.yaml (port 443, targetPort 9443), "
                              "manager/deployment.yaml (containerPort webhook-server = service.port, 9443)"),
    ChartFacts(PICKER_CHART[0], PICKER_CHART[1],
               "llm-d/llm-d-router v0.10.0 config/charts/routerlib/values.yaml (the gateway chart's ``router``): "
               "epp.replicas 1, epp.resources.requests cpu 8, memory 8Gi (L59-65); proxy and tokenizer off",
               (ChartPod("epp", "Deployment", 1, 8000, 8192, "router.epp.resources"),),
               supports=facts(ANY_KUBERNETES, "no cloud identity",
                              unconfirmed="no Kubernetes range read for llm-d-router v0.10.0"),
               webhook_source="llm-d/llm-d-router v0.10.0 (commit 71f4f09) config/charts/llm-d-router-gateway/templates "
                              "and config/charts/routerlib/templates: no webhook configuration or APIService"),
    ChartFacts("nvidia-dra-driver-gpu", "25.12.0",
               "NVIDIA/k8s-dra-driver-gpu v25.12.0 deployments/helm/nvidia-dra-driver-gpu: templates/controller.yaml "
               "replicas 1; values.yaml controller and kubeletPlugin containers resources {}; webhook.enabled false",
               (ChartPod("controller", "Deployment", 1, 0, 0, "controller.containers.computeDomain.resources"),
                ChartPod("kubelet-plugin", "DaemonSet", 1, 0, 0, "kubeletPlugin.containers.computeDomains.resources",
                         gpu_nodes_only="node affinity on the GPU pool's labels",
                         placed_by_value="kubeletPlugin.affinity")),
               supports=facts(KubernetesRange("1.32", None, "NVIDIA/k8s-dra-driver-gpu v25.12.0 deployments/helm/"
                                              "nvidia-dra-driver-gpu/Chart.yaml kubeVersion \">=1.32.0-0\""),
                              "no cloud identity"),
               webhooks=(ChartWebhook("gpu.nvidia.com", "nvidia-dra-driver-gpu-webhook", 443, 443, "Fail",
                                      "resourceclaims, resourceclaimtemplates CREATE/UPDATE",
                                      enabled_by=("webhook.enabled",)),),
               webhook_source="NVIDIA/k8s-dra-driver-gpu v25.12.0 (commit 0882da8) deployments/helm/nvidia-dra-driver-gpu "
                              "templates/validatingwebhookconfiguration.yaml (only if webhook.enabled, values.yaml "
                              "default false; failurePolicy default Fail), webhook-service.yaml (port "
                              "webhook.servicePort 443, targetPort webhook = webhook.containerPort 443)"),
    *(ChartFacts(CLUSTER_AUTOSCALER, chart,
                 f"kubernetes/autoscaler {commit} cluster-autoscaler/charts/cluster-autoscaler/values.yaml: replicaCount "
                 "1, resources {} (k3infra sets 100m / 300Mi, the file's commented example)",
                 (ChartPod("cluster-autoscaler", "Deployment", 1, 0, 0, "resources"),),
                 supports=_cluster_autoscaler(chart, commit, app, sdk),
                 webhook_source=f"kubernetes/autoscaler {commit} cluster-autoscaler/charts/cluster-autoscaler/templates: "
                                "Deployment, Service, RBAC, PodDisruptionBudget, optional ServiceMonitor, "
                                "PrometheusRule and VPA; no webhook configuration or APIService")
      for chart, commit, app, sdk in (
          ("9.53.0", "a2db9eb71c", "1.34.2", "cloudprovider/aws/aws-sdk-go 1.48.7 aws/defaults/defaults.go reads "
           "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (EKS Pod Identity, from Go v1 1.47.11: EKS User Guide, "
           "pod-id-minimum-sdk) and web identity tokens (IRSA)"),
          ("9.59.0", "5a0b98e45f", "1.35.0", "cloudprovider/aws/aws_sdk_provider.go: aws-sdk-go-v2 config v1.32.3 "
           "LoadDefaultConfig (EKS Pod Identity, IRSA)"))),
    ChartFacts("nvidia-device-plugin", "0.17.4",
               "NVIDIA/k8s-device-plugin v0.17.4 deployments/helm/nvidia-device-plugin/values.yaml (resources {}, "
               "affinity on NVIDIA PCI devices or nvidia.com/gpu.present) and its node-feature-discovery 0.15.3 "
               "subchart (master and gc replicaCount 1, worker a DaemonSet, every resources {})",
               (ChartPod("device-plugin", "DaemonSet", 1, 0, 0, "resources",
                         gpu_nodes_only="the chart's node affinity selects nodes with NVIDIA GPUs"),
                ChartPod("gpu-feature-discovery", "DaemonSet", 1, 0, 0, "resources", enabled_by=("gfd.enabled",),
                         gpu_nodes_only="the chart's node affinity selects nodes with NVIDIA GPUs"),
                ChartPod("nfd-master", "Deployment", 1, 0, 0, "nfd.master.resources",
                         enabled_by=("nfd.enabled", "gfd.enabled")),
                ChartPod("nfd-gc", "Deployment", 1, 0, 0, "nfd.gc.resources",
                         enabled_by=("nfd.enabled", "gfd.enabled")),
                ChartPod("nfd-worker", "DaemonSet", 1, 0, 0, "nfd.worker.resources",
                         enabled_by=("nfd.enabled", "gfd.enabled"))),
               supports=facts(KubernetesRange("1.10", None, "NVIDIA/k8s-device-plugin v0.17.4 deployments/helm/"
                                              "nvidia-device-plugin/Chart.yaml kubeVersion \">= 1.10.0-0\""),
                              "no cloud identity"),
               webhook_source="NVIDIA/k8s-device-plugin v0.17.4 (commit fd56a74) deployments/helm/nvidia-device-plugin "
                              "templates: no webhook configuration or APIService (node-feature-discovery 0.15.3 runs "
                              "master, worker and gc only)"),
    ChartFacts("dcgm-exporter", "4.8.2",
               "NVIDIA/dcgm-exporter 4.5.3-4.8.2 (commit 691c927) deployment/values.yaml: resources.requests cpu 100m, "
               "memory 128Mi",
               (ChartPod("exporter", "DaemonSet", 1, 100, 128, "resources",
                         gpu_nodes_only="k3infra's node selector of the GPU pool", placed_by_value="nodeSelector"),),
               supports=facts(ANY_KUBERNETES, "no cloud identity", unconfirmed="no kubeVersion read at 4.8.2"),
               webhook_source="NVIDIA/dcgm-exporter deployment/templates, every stored version: DaemonSet, "
                              "Service, ServiceMonitor, RBAC, config maps, network policy; no webhook template"),
    ChartFacts("oci://registry.k8s.io/networking/charts/dranet", "1.4.0",
               "kubernetes-sigs/dranet v1.4.0 (commit ca195e2) deployments/helm/dranet/values.yaml: resources.requests "
               "cpu 100m, memory 50Mi; tolerates every NoSchedule taint",
               (ChartPod("dranet", "DaemonSet", 1, 100, 50, "resources",
                         gpu_nodes_only="k3infra's node selector of the GPU pool", placed_by_value="nodeSelector"),),
               supports=facts(KubernetesRange("1.32", None, "kubernetes-sigs/dranet v1.4.0 README: DRA, beta and off by "
                                              "default in Kubernetes 1.32"), "no cloud identity"),
               webhook_source="kubernetes-sigs/dranet v1.4.0 (commit ca195e2) deployments/helm/dranet/templates: no "
                              "webhook configuration or APIService"),
    ChartFacts("aws-efa-k8s-device-plugin", "0.5.29",
               "aws/eks-charts (commit 2a58b2d) stable/aws-efa-k8s-device-plugin/values.yaml: resources {}, node "
               "affinity on EFA instance types",
               (ChartPod("device-plugin", "DaemonSet", 1, 0, 0, "resources",
                         gpu_nodes_only="k3infra's node selector of the GPU node group",
                         placed_by_value="nodeSelector"),),
               supports=facts(KubernetesRange(None, None, "aws/eks-charts 2a58b2d stable/aws-efa-k8s-device-plugin/"
                                              "Chart.yaml: no kubeVersion"), "no cloud identity"),
               webhook_source="aws/eks-charts (commit 2a58b2d) stable/aws-efa-k8s-device-plugin/templates: a DaemonSet "
                              "only; no webhook configuration"),
    ChartFacts("sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart", "",
               "aws/sagemaker-hyperpod-cli 011ca92 helm_chart/HyperPodHelmChart: values.yaml enables training "
               "operators, mpi-operator, the NVIDIA, EFA and Neuron device plugins and the health monitoring agent; "
               "charts/training-operators Deployment (replicas 1, no resources), charts/mpi-operator (replicas 1, "
               "resources {}); the DaemonSets select ml.* (HyperPod) or Neuron instance types by node affinity",
               (ChartPod("training-operator", "Deployment", 1, 0, 0, ""),
                ChartPod("mpi-operator", "Deployment", 1, 0, 0, ""),
                ChartPod("nvidia-device-plugin", "DaemonSet", 1, 0, 0, "",
                         gpu_nodes_only="node affinity on HyperPod GPU instance types (values.yaml)"),
                ChartPod("aws-efa-k8s-device-plugin", "DaemonSet", 1, 0, 0, "",
                         gpu_nodes_only="node affinity on EFA instance types (supportedInstanceLabels)"),
                ChartPod("neuron-device-plugin", "DaemonSet", 1, 0, 0, "",
                         gpu_nodes_only="node affinity on Inferentia and Trainium instance types"),
                ChartPod("health-monitoring-agent", "DaemonSet", 1, 500, 512, "",
                         gpu_nodes_only="node affinity on HyperPod instance types")),
               supports=facts(KubernetesRange("1.28", "1.34", "SageMaker developer guide, "
                                              "sagemaker-hyperpod-eks-prerequisites: HyperPod supports 1.28 to 1.34"),
                              "the health monitoring agent's own node role; no pod identity"),
               webhook_source="aws/sagemaker-hyperpod-cli 011ca92 helm_chart: no ValidatingWebhookConfiguration, "
                              "MutatingWebhookConfiguration or APIService in any template"),
    ChartFacts("aws-load-balancer-controller", "1.13.2",
               "aws/eks-charts (commit a4b8061) stable/aws-load-balancer-controller 1.13.2 (app v2.13.2): installed by "
               "the HyperPod inference add-on (aws.policies.LOAD_BALANCER_CONTROLLER_VERSION), not by a Helm "
               "release of k3infra's", (),
               supports=facts(KubernetesRange(None, None, "aws/eks-charts a4b8061 stable/aws-load-balancer-controller/"
                                              "Chart.yaml: no kubeVersion"),
                              "the HyperPod inference add-on binds it to an IRSA role (helm_to_addon.sh: "
                              "alb.serviceAccount.roleArn, an AssumeRoleWithWebIdentity trust)", C.IRSA),
               webhooks=(_alb("mpod.elbv2.k8s.aws", "Ignore",
                              "pods CREATE in namespaces labelled elbv2.k8s.aws/pod-readiness-gate-inject"),
                         _alb("mservice.elbv2.k8s.aws", "Fail", "services CREATE",
                              enabled_by=("enableServiceMutatorWebhook",)),
                         _alb("mtargetgroupbinding.elbv2.k8s.aws", "Fail", "targetgroupbindings CREATE/UPDATE"),
                         _alb("vingressclassparams.elbv2.k8s.aws", "Fail", "ingressclassparams CREATE/UPDATE"),
                         _alb("vtargetgroupbinding.elbv2.k8s.aws", "Fail", "targetgroupbindings CREATE/UPDATE"),
                         _alb("vingress.elbv2.k8s.aws", "Fail", "ingresses CREATE/UPDATE",
                              disabled_by="webhookConfig.disableIngressValidation")),
               webhook_source="aws/eks-charts a4b8061 stable/aws-load-balancer-controller templates/webhook.yaml "
                              "(podMutatorWebhookConfig.failurePolicy Ignore, enableServiceMutatorWebhook default true, "
                              "the others Fail), templates/service.yaml (port 443, targetPort webhook-server), "
                              "templates/deployment.yaml (containerPort webhookBindPort, default 9443)"),
)

CHARTS: Mapping[tuple[str, str], ChartFacts] = MappingProxyType({(c.chart, c.version): c for c in _CHARTS})
"""Every chart k3infra installs, by (chart, pinned version)."""

def pinned_chart(chart: str, version: str) -> ChartFacts | None:
    """The facts of the chart a Helm chart resource installs: ``CHARTS[(chart, version)]``, or, for a chart a stack
    takes from its mirror (an oci:// registry, a repository or a local directory holding it under its name,
    ``MIRRORABLE_CHARTS``), the pinned chart of that name at that version."""
    pinned = MIRRORABLE_CHARTS.get(chart_name(chart))
    return CHARTS.get((chart, version)) or (CHARTS.get(pinned) if pinned and pinned[1] == version else None)


ADDON_CHARTS: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType({
    "amazon-sagemaker-hyperpod-inference": (("aws-load-balancer-controller", "1.13.2"),),
})
"""The charts an EKS add-on installs that serve webhooks, by add-on name (aws.policies: the HyperPod inference
add-on installs the AWS Load Balancer Controller, aws/sagemaker-hyperpod-cli 011ca92
``helm_chart/HyperPodHelmChart/charts/inference-operator/Chart.yaml``)."""


def webhooks_served(chart: ChartFacts, values: Mapping[str, object]) -> tuple[ChartWebhook, ...]:
    """The webhooks ``chart`` registers with ``values`` (k3infra's; unset paths take the chart's default)."""
    def truthy(path: str, default: bool) -> bool:
        node: object = values
        for part in path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]  # pyright: ignore[reportUnknownVariableType]
        return bool(node)

    defaults = {"enableServiceMutatorWebhook": True, "webhooks.enabled": True, "metricsServer.enabled": True}
    return tuple(w for w in chart.webhooks
                 if (not w.enabled_by or any(truthy(p, defaults.get(p, False)) for p in w.enabled_by))
                 and not (w.disabled_by and truthy(w.disabled_by, False)))


__all__ = ["ADDON_CHARTS", "LWS_CHART", "MIRRORABLE_CHARTS", "PICKER_CHART", "chart_name", "pinned_chart", "AGENTGATEWAY_CHART", "AGENTGATEWAY_CLASS", "AGENTGATEWAY_CRDS_CHART", "GATEWAY_API_CRDS", "INFERENCE_CRDS", "CHARTS", "CLUSTER_AUTOSCALER", "CLUSTER_AUTOSCALER_CHARTS", "KEDA_CHART", "ChartFacts",
           "ChartPod", "ChartWebhook", "webhooks_served"]
