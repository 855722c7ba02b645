"""The server pods' first init container: the wait for the weight sync's completion markers, so that an engine never
starts on partial weights; where the nodes keep the weights (``node_weights``, issue 40), then the choice between
the node copy and the bucket, written for the engine container (``NODE_CHOICE``)."""

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import Loader
from ..weightcopy import delivery
from . import pods
from .copier_pods import auth_window_args, copier_container
from .server_args import ModelServerArgs
from .node_agent import NODE_MOUNT
from .weight_loading import WEIGHTS_MOUNT

core = k8s.core.v1


MARKER_WAIT_RESOURCES = ("100m", "256Mi", "1", "1Gi")
MARKER_POLL_SECONDS = 15
"""How often the marker wait looks again."""
RUN_MOUNT = "/var/run/k3infra"
"""A pod-scoped directory the wait and the engine container share (an emptyDir)."""
NODE_CHOICE = f"{RUN_MOUNT}/weights"
"""The node copy's directory when the wait chose it, else empty: the engine container reads it (``CHOOSE_WEIGHTS``)."""
MODEL_LINK = f"{RUN_MOUNT}/model"
"""The one path the engine loads a filesystem model from, wherever the weights are (the node copy or the bucket's
mount): vLLM's compile cache key hashes ``ModelConfig.model`` as given (vllm 0.33.0 ``config/model.py``
``compute_hash``: ``model`` is not among its ``ignored_factors``), so a first warm-up from the bucket's path and a
restart from the node copy's would miss each other's cache."""
CHOOSE_WEIGHTS = (f'if [ -s {NODE_CHOICE} ]; then K3_MODEL="$(cat {NODE_CHOICE})"; '
                  'echo "weights from the node copy: $K3_MODEL" >&2; fi; '
                  f'case "$K3_MODEL" in /*) ln -sfn "$K3_MODEL" {MODEL_LINK} && K3_MODEL={MODEL_LINK};; esac')
"""The engine container's first command where the nodes keep the weights: the model path becomes the node copy's
directory when the wait chose it (the command lines read ``${K3_MODEL}``), otherwise the bucket's as before, and a
filesystem path is loaded through ``MODEL_LINK``."""

NODE_CHOICE_SCRIPT = """
: > "$K3_CHOICE"
if [ -n "${K3_NODE_MARKER:-}" ] && [ -f "$K3_NODE_MARKER" ] && cmp -s "$K3_NODE_MARKER" "$K3_BUCKET_MARKER"; then
  dirname "$(dirname "$K3_NODE_MARKER")" > "$K3_CHOICE"
  echo "node copy is the bucket's revision: $(cat "$K3_CHOICE")" >&2
else
  echo "no node copy of the bucket's revision: loading from the bucket" >&2
fi
"""
"""Through the bucket mount: the node copy is chosen when its marker (the agent writes the bucket's, byte for byte,
after every file verified against the manifest) equals the bucket's current one; anything else reads the bucket."""

MOUNT_WAIT_SCRIPT = """set -u
timeout=$1 interval=$2
shift 2
deadline=$(( $(date +%s) + timeout ))
for marker in "$@"; do
  until [ -f "$marker" ]; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "timed out after $timeout s waiting for $marker (the weight sync's completion marker, through the bucket mount)" >&2
      exit 1
    fi
    echo "waiting for $marker" >&2
    sleep "$interval"
  done
  echo "weights complete: $(cat "$marker")" >&2
done
"""
"""Wait for each marker file under the bucket mount, until the deadline. ``[ -f ]`` looks the path up (never lists a
directory: GCS FUSE's kernel list cache here never expires), so each poll reaches the store once its negative
lookup cache, where the driver keeps one, has expired: GCS FUSE ``metadata-cache:negative-ttl-secs`` (5 s by
default), ossfs 2.0 ``oss_negative_cache_timeout``, blobfuse2's attribute cache (``--attr-cache-timeout``, 120 s by
default); Mountpoint for S3 caches no negative lookup without ``--cache``/``--negative-metadata-ttl``. A marker is
therefore seen within one poll plus that TTL of its writing."""


def marker_wait(args: ModelServerArgs) -> tuple[list[core.ContainerArgs], list[core.VolumeArgs]]:
    """The init container that waits for the weight sync's markers (none without ``weights_marker``): through the
    bucket mount with the engine image when the loader mounts the bucket, else the copier reading the bucket as the
    server's identity."""
    marker = args.get("weights_marker")
    if not marker:
        return [], []
    timeout = str(int(marker["timeout_seconds"]))
    resources = pods.small_resources(*MARKER_WAIT_RESOURCES)
    keys = list(marker.get("marker_keys") or ())
    node = args.get("node_weights")
    mounts, volumes = node_choice_volumes(args)
    if args["loader"] == Loader.FUSE and keys:
        # The engine image is on the node for the engine container anyway; the CSI volume is mounted before any
        # container starts (GCS FUSE: its sidecar is a native sidecar, started before the other init containers).
        env = ([core.EnvVarArgs(name="K3_NODE_MARKER", value=f"{NODE_MOUNT}/weights/{keys[0]}"),
                core.EnvVarArgs(name="K3_BUCKET_MARKER", value=f"{WEIGHTS_MOUNT}/{keys[0]}"),
                core.EnvVarArgs(name="K3_CHOICE", value=NODE_CHOICE)] if node else None)
        return [core.ContainerArgs(
            name="wait-for-weights", image=args["image"], image_pull_policy="IfNotPresent",
            command=["/bin/sh", "-c", MOUNT_WAIT_SCRIPT + (NODE_CHOICE_SCRIPT if node else ""), "wait-for-weights",
                     timeout, str(MARKER_POLL_SECONDS), *(f"{WEIGHTS_MOUNT}/{k}" for k in keys)], env=env,
            resources=resources, security_context=pods.container_security(read_only_root=True),
            volume_mounts=[core.VolumeMountArgs(name="weights", mount_path=WEIGHTS_MOUNT, read_only=True), *mounts],
        )], volumes
    wait_args: list[pulumi.Input[str]] = ["wait", "--timeout", timeout, "--interval", str(MARKER_POLL_SECONDS),
                                          *auth_window_args(args["store"])]
    for repo in marker["repos"]:
        wait_args += ["--repo", repo]
    if node:
        wait_args += ["--node-dir", NODE_MOUNT, "--choice-file", NODE_CHOICE]
    container, copier_volumes = copier_container("wait-for-weights", wait_args, args["store"], marker["config_map"],
                                                 resources, mounts=mounts)
    return [container], [*copier_volumes, *volumes]


def node_choice_volumes(args: ModelServerArgs) -> tuple[list[core.VolumeMountArgs], list[core.VolumeArgs]]:
    """The node's weights directory (read-only) and the pod's run directory the choice is written to; none where the
    nodes keep no weights."""
    node = args.get("node_weights")
    if not node or not args.get("weights_marker"):
        return [], []
    return ([core.VolumeMountArgs(name="node-weights", mount_path=NODE_MOUNT, read_only=True),
             core.VolumeMountArgs(name="k3infra-run", mount_path=RUN_MOUNT)],
            [core.VolumeArgs(name="node-weights", host_path=core.HostPathVolumeSourceArgs(
                path=node, type="DirectoryOrCreate")),
             core.VolumeArgs(name="k3infra-run", empty_dir=core.EmptyDirVolumeSourceArgs(size_limit="1Mi"))])


def marker_wait_egress(args: ModelServerArgs) -> str | None:
    """What the server's marker wait downloads at every start (the copier's image and packages), or None."""
    marker = args.get("weights_marker")
    if not marker or (args["loader"] == Loader.FUSE and marker.get("marker_keys")):
        return None
    return (f"the server pods' wait-for-weights init container (loader {args['loader']}) runs the weight copier: it "
            f"pulls {delivery.IMAGE} once per node and installs the copier's pinned packages from PyPI at every "
            "start, so the GPU nodes need egress to that registry and to pypi.org (loader fuse waits through the "
            "bucket mount with the engine image instead)")
