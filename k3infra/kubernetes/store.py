"""The weight store of an existing cluster: an S3-compatible bucket, a PersistentVolumeClaim, or a node directory.

An S3-compatible store (MinIO, Ceph RGW) is what the clouds' buckets are to serving: the sync copies into it with
the same copier (``k3infra.weightcopy``, s3fs with the store's endpoint), the RunAI streamer reads it, and the
marker wait reads it. Its access keys are Pulumi secrets that ``serve`` turns into one Kubernetes Secret, which
only the containers that touch the store read (``WeightStore.credentials``). A PVC or a node directory already
holds the model and is mounted read-only.

How the readers find an S3-compatible endpoint, as the pinned releases read it:
- the RunAI streamer: ``AWS_ENDPOINT_URL``, and ``RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING=0`` for path-style
  addressing ("Should be 0 for reading from compatible object store", run-ai/runai-model-streamer
  docs/src/env-vars.md); vLLM 0.33.0 copies ``AWS_ENDPOINT_URL`` into ``RUNAI_STREAMER_S3_ENDPOINT`` when that is
  unset (vllm/model_executor/model_loader/runai_streamer_loader.py);
- the copier: s3fs's ``endpoint_url`` and botocore's ``addressing_style`` (``K3_COPY_STORAGE_OPTIONS``,
  s3fs ``S3FileSystem(endpoint_url=..., config_kwargs=...)``);
- the AWS CLI of the bucket-copy loader: ``AWS_ENDPOINT_URL`` (AWS SDKs' service endpoint setting).
"""

import json

import pulumi

from ..catalog import WeightSource
from ..catalog.tools import AWS_CLI_IMAGE, S3_SYNC_COMMAND
from ..catalog.transfer import GRANT_PROPAGATION
from ..catalog.types import Cloud
from ..config import StackConfig
from ..serving.contract import SERVER_SERVICE_ACCOUNT, SYNC_SERVICE_ACCOUNT, CopyTool, WeightStore, WeightVolume

ACCESS_KEY_ENV = "AWS_ACCESS_KEY_ID"
SECRET_KEY_ENV = "AWS_SECRET_ACCESS_KEY"


def uri(cfg: StackConfig) -> str:
    """Where the model is: ``s3://BUCKET/PREFIX/<id>``, or the mount's path for a volume."""
    k = cfg.kubernetes
    assert k is not None
    subpath = cfg.weights.model_path(cfg.model.hf_id)
    if k.storage == WeightSource.S3:
        return f"s3://{cfg.weights.bucket}/{subpath}"
    if k.storage == WeightSource.PVC:
        return f"pv://{k.volume}/{subpath}"
    return f"file://{k.host_path}/{subpath}"


def s3_env(cfg: StackConfig) -> dict[str, str]:
    """What every S3 reader of the store needs besides the keys: endpoint, region, addressing."""
    k = cfg.kubernetes
    assert k is not None and k.s3_endpoint is not None
    return {"AWS_ENDPOINT_URL": k.s3_endpoint, "AWS_REGION": k.s3_region, "AWS_DEFAULT_REGION": k.s3_region,
            # No instance metadata service to ask on these nodes: botocore would wait on 169.254.169.254 first.
            "AWS_EC2_METADATA_DISABLED": "true"}


def weight_store(cfg: StackConfig) -> WeightStore:
    """The store serving reads and the sync writes."""
    k = cfg.kubernetes
    assert k is not None
    store: WeightStore = {
        "uri": uri(cfg),
        "model_subpath": cfg.weights.model_path(cfg.model.hf_id),
        # Static keys authenticate, not the service accounts: no annotation binds them to anything.
        "reader": {"name": SERVER_SERVICE_ACCOUNT},
        "writer": {"name": SYNC_SERVICE_ACCOUNT},
        "grant_propagation_seconds": GRANT_PROPAGATION[Cloud.KUBERNETES].seconds,
        "download": {"image": AWS_CLI_IMAGE, "command": ["/bin/sh", "-c", S3_SYNC_COMMAND]},
    }
    if k.storage != WeightSource.S3:
        volume: WeightVolume = ({"persistent_volume": k.volume} if k.storage == WeightSource.PVC and k.volume
                                else {"host_path": k.host_path or ""})
        store["volume"] = volume
        return store
    env = s3_env(cfg)
    download: CopyTool = {"image": AWS_CLI_IMAGE, "command": ["/bin/sh", "-c", S3_SYNC_COMMAND], "env": dict(env)}
    options = {"endpoint_url": k.s3_endpoint, "client_kwargs": {"region_name": k.s3_region},
               "config_kwargs": {"s3": {"addressing_style": "virtual" if k.virtual_addressing else "path"}}}
    store.update({
        "streamer_env": {**env, "RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING": "1" if k.virtual_addressing else "0"},
        "copy_env": {**env, "K3_COPY_STORAGE_OPTIONS": json.dumps(options, sort_keys=True)},
        "download": download,
    })
    if k.s3_access_key_id and k.s3_secret_access_key:
        store["credentials"] = {ACCESS_KEY_ENV: pulumi.Output.secret(k.s3_access_key_id),
                                SECRET_KEY_ENV: pulumi.Output.secret(k.s3_secret_access_key)}
    return store
