"""The weight copier in a pod: its ConfigMap and its container (the sync Job's workers; the server's marker wait
where the loader does not mount the bucket).

The copier (the package k3infra.weightcopy.copier, a key per module) and its locked, hashed requirements for the
bucket's scheme ship as a ConfigMap mounted as the package's directory; the container installs the requirements
into /tmp (``pip --require-hashes --no-deps``) and runs the copier as the pod's identity, with the store's
``copy_env``. The python image is pulled once per node (``IfNotPresent``: its tag names one CPython patch release),
but the packages come from PyPI at every start: a pod running the copier needs egress to the image's registry and
to PyPI. The copier waits out a refused authorization
for the store's ``grant_propagation_seconds`` (``--auth-window``).
"""

from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from ..catalog.transfer import GRANT_PROPAGATION
from ..weightcopy import delivery
from . import pods
from .contract import WeightStore

core = k8s.core.v1
meta = k8s.meta.v1

TMP_SIZE = "2Gi"
"""The copier's installed packages (about 300 MB) and temporary files."""


LONGEST_GRANT_PROPAGATION = max(g.seconds for g in GRANT_PROPAGATION.values())
"""The window of a store that states none: the longest any cloud states."""


def auth_window_args(store: WeightStore) -> list[str]:
    """``--auth-window SECONDS``: how long the copier retries a refused authorization at start (the store's stated
    grant propagation)."""
    return ["--auth-window", str(int(store.get("grant_propagation_seconds") or LONGEST_GRANT_PROPAGATION))]


def credential_env(store: WeightStore) -> list[core.EnvVarArgs]:
    """The store's credentials (``WeightStore.credentials``) as variables read from their Secret; none without."""
    secret = store.get("credentials_secret")
    if not secret:
        return []
    return [pods.secret_env(name, secret, name) for name in sorted(store.get("credentials") or {})]


def scheme_of(store: WeightStore) -> pulumi.Output[str]:
    """The bucket URI's scheme (s3, gs, az, oss)."""
    return pulumi.Output.from_input(store["uri"]).apply(lambda u: u.split("://", 1)[0])


def copier_config_map(name: str, namespace: str, store: WeightStore, opts: pulumi.ResourceOptions) -> core.ConfigMap:
    """The copier's modules and its locked requirements for the store's scheme, as a ConfigMap."""
    return core.ConfigMap(
        name,
        metadata=meta.ObjectMetaArgs(name=name, namespace=namespace, labels=pods.labels(name, "weight-copier")),
        data={**delivery.modules(), delivery.REQUIREMENTS_KEY: scheme_of(store).apply(delivery.requirements)},
        opts=opts,
    )


def copier_container(cname: str, args: Sequence[pulumi.Input[str]], store: WeightStore, config_map: str,
                     resources: core.ResourceRequirementsArgs, image: Optional[str] = None,
                     secret_env: Sequence[core.EnvVarArgs] = (),
                     mounts: Sequence[core.VolumeMountArgs] = ()) -> tuple[core.ContainerArgs, list[core.VolumeArgs]]:
    """A container running the copier with ``args`` (from the ConfigMap, as the pod's identity), and its volumes;
    ``mounts``: more of the pod's volumes it sees (the node's directories, serving.node_agent)."""
    env = pods.env_list({"HOME": "/tmp", "HF_HUB_DISABLE_TELEMETRY": "1",
                         # hf_xet's high-performance mode: more concurrent chunk fetches (huggingface_hub docs,
                         # environment variables)
                         "HF_XET_HIGH_PERFORMANCE": "1", **(store.get("copy_env") or {})})
    container = core.ContainerArgs(
        name=cname, image=image or delivery.IMAGE, image_pull_policy="IfNotPresent",
        command=list(delivery.COMMAND), args=list(args), env=[*env, *secret_env, *credential_env(store)],
        resources=resources,
        security_context=pods.container_security(read_only_root=True),
        volume_mounts=[core.VolumeMountArgs(name="copier", mount_path=f"{delivery.MOUNT}/{delivery.PACKAGE}",
                                                read_only=True),
                       core.VolumeMountArgs(name="copier-tmp", mount_path="/tmp"), *mounts],
    )
    volumes = [
        core.VolumeArgs(name="copier", config_map=core.ConfigMapVolumeSourceArgs(name=config_map)),
        core.VolumeArgs(name="copier-tmp", empty_dir=core.EmptyDirVolumeSourceArgs(size_limit=TMP_SIZE)),
    ]
    return container, volumes



__all__ = ["LONGEST_GRANT_PROPAGATION", "auth_window_args", "copier_config_map", "copier_container", "credential_env",
           "scheme_of"]
