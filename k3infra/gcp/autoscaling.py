"""GKE: KEDA, installed by its chart on the system pool, scaling the serving workload on the engine's metrics in
Google Cloud Managed Service for Prometheus.

KEDA rather than GKE's managed alternative: an HPA on Prometheus metrics in GKE needs the Custom Metrics
Stackdriver Adapter installed and granted as well (GKE docs, "Autoscale on custom metrics: Managed Service for
Prometheus"), and reads one metric per HPA without KEDA's query language; KEDA's Prometheus scaler queries Managed
Service for Prometheus's Prometheus API directly (GKE docs, "Scale to zero using KEDA"; KEDA v2.20.2
``pkg/scalers/prometheus_scaler.go``: with ``podIdentity.provider: gcp`` it queries with a Workload Identity token
of scope monitoring.read).

- The operator's identity: Workload Identity Federation, the principal of ``keda/keda-operator`` granted
  ``roles/monitoring.viewer`` on the project (the same principal form as the weight bucket's grants).
- The firewall rule of the control plane to the nodes takes KEDA's webhook (9443) and APIService (6443) ports too
  (k3infra.gcp.deployment.webhook_ports): a private cluster's own rule admits 443 and 10250 only.
"""

import pulumi
import pulumi_gcp as gcp

from .. import names
from ..config import StackConfig
from ..serving.autoscaling import workload_target
from ..serving.keda import KEDA_NAMESPACE, KEDA_SERVICE_ACCOUNT, install_keda, scaler_objects
from ..serving.stack import Serving
from .bucket import workload_identity_principal
from .cluster import GkeCluster

TRIGGER_AUTH = f"{names.PREFIX}-keda-gcp"
METRICS_READER_ROLE = "roles/monitoring.viewer"
"""Read Cloud Monitoring metrics, Managed Service for Prometheus's included (GKE docs, "Query using the Prometheus
API": the querying identity needs monitoring.timeSeries.list)."""
SYSTEM_POOL_SELECTOR = {"cloud.google.com/gke-nodepool": "system"}
"""GKE labels every node with its pool's name; the CPU pool is ``system`` (k3infra.gcp.cluster)."""


def gmp_endpoint(project: str) -> str:
    """The Prometheus API of Managed Service for Prometheus for ``project`` (GKE docs, "Query using the Prometheus
    API": ``https://monitoring.googleapis.com/v1/projects/PROJECT_ID/location/global/prometheus``)."""
    return f"https://monitoring.googleapis.com/v1/projects/{project}/location/global/prometheus"


def keda(cfg: StackConfig, cluster: GkeCluster, serving: Serving) -> list[pulumi.Resource]:
    """KEDA, its grant and the ScaledObject of a stack with autoscaling on (nothing otherwise)."""
    a, g = cfg.autoscaling, cfg.gcp
    if a is None or not a.enabled or g is None or workload_target(cfg.workload) is None:
        return []
    project = gcp.organizations.get_project_output(project_id=g.project)
    member = pulumi.Output.all(project.number, cluster.workload_pool).apply(
        lambda v: workload_identity_principal(str(v[0]), str(v[1]), KEDA_NAMESPACE, KEDA_SERVICE_ACCOUNT))
    grant = gcp.projects.IAMMember(f"{names.PREFIX}-keda-metrics-reader", gcp.projects.IAMMemberArgs(
        project=g.project, role=METRICS_READER_ROLE, member=member))
    installed = install_keda(SYSTEM_POOL_SELECTOR, pulumi.ResourceOptions(
        provider=cluster.provider, depends_on=[cluster.system_pool, grant, *cluster.webhook_access]))
    # Managed collection labels every series with its cluster: the project's other clusters are not counted.
    return [grant, *installed, *scaler_objects(
        cfg, serving, provider=cluster.provider, auth_name=TRIGGER_AUTH,
        auth_spec={"podIdentity": {"provider": "gcp"}},
        server_address=gmp_endpoint(g.project), labels={"cluster": cfg.cluster.name, "namespace": cfg.namespace},
        depends_on=installed)]
