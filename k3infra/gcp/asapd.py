"""The ``asapd-lite`` DaemonSet: brings up the MRDMA NICs of bare-metal A4X Max nodes.

An A4X Max node's eight ConnectX-8 NICs reach pods through GKE managed DRANET (``mrdma.google.com``), but only
once Google's ``asapd-lite`` agent has configured them: without it no child interface is created, DRANET filters
the NICs out and every RDMA claim of the server stays pending (NVIDIA/aicr docs/integrator/gke-a4x-max-networking.md;
Google's A4X Max guide, "Configure the MRDMA NICs with asapd-lite"). GKE does not install it.

The object follows cluster-toolkit ``examples/gke-a4x-max-bm/asapd-lite-installer.yaml`` (what
``gke-a4x-max-bm.yaml`` installs with ``asapd_lite: install: true``): ``asapd-lite`` in ``kube-system``,
``system-node-critical``, every taint tolerated, on every A4X Max Container-Optimized OS node of the cluster,
privileged on the host network and PID namespace, 8 GiB of the node's 2 MiB huge pages, ready when its
``/healthz`` answers. Google's own copy (container-engine-accelerators
``asapd-lite-installer/asapd-lite-installer-a4x-max-bm-cos.yaml``) adds a NetSLO eBPF telemetry container whose
image is the moving tag ``release``; it is left out: nothing here depends on it and k3infra pins every image.
"""

from typing import Mapping

import pulumi
import pulumi_kubernetes as k8s

from ..serving.scan import skip_annotations

core = k8s.core.v1
meta = k8s.meta.v1

NAME = "asapd-lite"
"""Name and ``k8s-app`` label of the DaemonSet, as Google's manifest has them: a copy applied by hand from Google's
guide is the same object, not a second agent fighting for the NICs and the health port."""

NAMESPACE = "kube-system"

IMAGE = "us-docker.pkg.dev/gce-ai-infra/asapd-lite/asapd-lite:v0.0.8"
"""cluster-toolkit examples/gke-a4x-max-bm/asapd-lite-installer.yaml at 1047080 (bumped to v0.0.8 in #5715);
container-engine-accelerators asapd-lite-installer at 992db81 pins the same tag. Google publishes it by tag only."""

INSTANCE_TYPES = ("a4x-maxgpu-4g-metal", "a4x-maxgpu-4g-metal-nolssd")
"""The machine types the agent runs on (the installer's node affinity)."""

HEALTH_PORT = 19540
"""The agent's ``/healthz`` port on the host network (the installer's probes)."""

HUGEPAGES_2M_MIB = 8192
"""2 MiB huge pages the agent takes (``hugepages-2Mi: 8192Mi``): the node pool must pre-allocate at least this
(A4X Max: 4096 pages = 8192 MiB, k3infra.catalog.gke)."""

MEMORY = "1024Mi"

STARTUP = """set -x
/usr/local/bin/run_asapd_lite.sh
# Interfaces whose IPv6 duplicate address detection failed stay down: bounce them and exit, so that the kubelet
# restarts the agent and it configures them again (the installer's check).
sleep 15
bounced=0
for iface in $(ip -o link show | awk -F': ' '{print $2}' | grep gpu); do
  if ip -6 addr show dev "$iface" | grep -q dadfailed; then
    echo "dadfailed on $iface: bringing it down and up"
    ip link set dev "$iface" down
    ip link set dev "$iface" up
    bounced=1
  fi
done
if [ "$bounced" -eq 1 ]; then
  echo "restarting to configure the bounced interfaces again"
  exit 1
fi
echo "no dadfailed interface"
wait
"""
"""The installer's container script."""

HOST_PATHS: Mapping[str, tuple[str, str, str | None]] = {
    "host-sys": ("/sys", "/sys", None),
    "host-proc": ("/proc", "/proc", None),
    "host-udev-rules": ("/etc/udev/rules.d", "/etc/udev/rules.d", None),
    "host-run-udev": ("/run/udev", "/run/udev", None),
    "host-run-asapd-lite": ("/run/asapd-lite", "/run/asapd-lite", "DirectoryOrCreate"),
    "var-log-google-asapd-lite": ("/var/log/google/asapd-lite", "/var/log/google/asapd-lite", "DirectoryOrCreate"),
    # Where the agent leaves its IPAM binary for the host to run (a writable location on Container-Optimized OS).
    "var-lib-google-asapd-lite": ("/var/lib/google/asapd-lite", "/var/lib/google/asapd-lite", "DirectoryOrCreate"),
    "host-systemd-system": ("/etc/systemd/system", "/etc/systemd/system", None),
    "host-run-systemd": ("/run/systemd", "/run/systemd", None),
}
"""Volume name to (host path, mount path, hostPath type) of the installer: the NICs, udev rules and systemd units the
agent writes on the host."""

NEEDS_HOST = ("configures the node's MRDMA NICs, udev rules and systemd units (Google's asapd-lite installer): "
              "privileged, on the host network and PID namespace")

SKIPS: Mapping[str, str] = {
    "CKV_K8S_10": "no CPU figure is stated for the agent (Google's installer sets none); it runs at "
                  "system-node-critical on a node the server otherwise owns",
    "CKV_K8S_11": "no CPU figure is stated for the agent (Google's installer sets none); it runs at "
                  "system-node-critical on a node the server otherwise owns",
    "CKV_K8S_15": "the image is pinned by tag and pulled if not present: a node restart must not depend on the "
                  "registry to bring the RDMA NICs back",
    "CKV_K8S_16": NEEDS_HOST,
    "CKV_K8S_17": NEEDS_HOST,
    "CKV_K8S_19": NEEDS_HOST,
    "CKV_K8S_20": NEEDS_HOST,
    "CKV_K8S_22": NEEDS_HOST,
    "CKV_K8S_23": NEEDS_HOST,
    "CKV_K8S_28": NEEDS_HOST,
    "CKV_K8S_37": NEEDS_HOST,
    "CKV_K8S_40": NEEDS_HOST,
    "CKV_K8S_38": "Google's installer runs the agent with the namespace's default service account token; k3infra "
                  "does not take away what the agent may read",
    "CKV_K8S_43": "Google publishes asapd-lite by version tag only (v0.0.8); no digest is published to pin",
    "CKV2_K8S_6": "the pod runs on the host network, where NetworkPolicy does not apply",
}
"""Checks the agent cannot satisfy, with the reason (checkov reads them from the annotations)."""


def daemonset(name: str, *, opts: pulumi.ResourceOptions) -> k8s.apps.v1.DaemonSet:
    """The ``asapd-lite`` DaemonSet (module docstring). Give ``opts`` a dependency on the node pool: Pulumi then
    waits until the agent is ready on every node, and whatever depends on this waits for the NICs."""
    labels = {"k8s-app": NAME}
    notes = skip_annotations(SKIPS)
    resources = {"memory": MEMORY, "hugepages-2Mi": f"{HUGEPAGES_2M_MIB}Mi"}
    health = core.HTTPGetActionArgs(path="/healthz", port=HEALTH_PORT)
    volumes = [core.VolumeArgs(name=v, host_path=core.HostPathVolumeSourceArgs(path=host, type=kind))
               for v, (host, _, kind) in HOST_PATHS.items()]
    volumes.append(core.VolumeArgs(name="hugepage-2mi",
                                   empty_dir=core.EmptyDirVolumeSourceArgs(medium="HugePages-2Mi")))
    mounts = [core.VolumeMountArgs(name=v, mount_path=path) for v, (_, path, _) in HOST_PATHS.items()]
    mounts.append(core.VolumeMountArgs(name="hugepage-2mi", mount_path="/hugepages-2Mi"))
    return k8s.apps.v1.DaemonSet(
        name,
        metadata=meta.ObjectMetaArgs(name=NAME, namespace=NAMESPACE, labels=labels, annotations=notes),
        spec=k8s.apps.v1.DaemonSetSpecArgs(
            selector=meta.LabelSelectorArgs(match_labels=labels),
            # One node at a time: the agent going down takes the node's RDMA NICs with it.
            update_strategy=k8s.apps.v1.DaemonSetUpdateStrategyArgs(
                type="RollingUpdate", rolling_update=k8s.apps.v1.RollingUpdateDaemonSetArgs(max_unavailable="1%")),
            template=core.PodTemplateSpecArgs(
                metadata=meta.ObjectMetaArgs(labels=labels, annotations=notes),
                spec=core.PodSpecArgs(
                    priority_class_name="system-node-critical",
                    affinity=core.AffinityArgs(node_affinity=core.NodeAffinityArgs(
                        required_during_scheduling_ignored_during_execution=core.NodeSelectorArgs(
                            node_selector_terms=[core.NodeSelectorTermArgs(match_expressions=[
                                core.NodeSelectorRequirementArgs(key="node.kubernetes.io/instance-type",
                                                                 operator="In", values=list(INSTANCE_TYPES)),
                                core.NodeSelectorRequirementArgs(key="cloud.google.com/gke-os-distribution",
                                                                 operator="In", values=["cos"]),
                            ])]))),
                    tolerations=[core.TolerationArgs(operator="Exists")],
                    host_network=True,
                    host_pid=True,
                    # Privileged containers run unconfined whatever this says; it is the default for any other.
                    security_context=core.PodSecurityContextArgs(
                        seccomp_profile=core.SeccompProfileArgs(type="RuntimeDefault")),
                    containers=[core.ContainerArgs(
                        name=NAME,
                        image=IMAGE,
                        image_pull_policy="IfNotPresent",
                        command=["/bin/bash", "-c"],
                        args=[STARTUP],
                        env=[core.EnvVarArgs(name="LD_LIBRARY_PATH", value="/asapd-lite/controller")],
                        liveness_probe=core.ProbeArgs(http_get=health, initial_delay_seconds=60),
                        readiness_probe=core.ProbeArgs(http_get=health),
                        security_context=core.SecurityContextArgs(privileged=True),
                        # Huge pages need requests equal to limits; memory's request is what its limit implies.
                        resources=core.ResourceRequirementsArgs(requests=dict(resources), limits=dict(resources)),
                        volume_mounts=mounts,
                    )],
                    volumes=volumes,
                ),
            ),
        ),
        opts=opts)
