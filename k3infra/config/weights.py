"""The weights section and the loader: the bucket (or an existing cluster's volume), the pinned revisions, the stated
bucket figures, and how the weights reach the engine."""

import re
from typing import Any, Mapping

from .. import sizing as sz
from ..catalog import Cloud, Loader, Platform, WeightSource
from .clouds.kubernetes import kubernetes_storage
from .model import WeightsConfig
from .naming import bucket_name_problem, storage_account_problem
from .problems import Problems
from .schema import K, MISSING


#: Schemes the RunAI Model Streamer reads directly (002 §4.3 az://, §5.3 gs://; s3:// is its native one).
STREAMER_CLOUDS = frozenset({Cloud.GCP, Cloud.AWS, Cloud.AZURE, Cloud.KUBERNETES})


#: Default loader per platform (fuse elsewhere): managed serving has its own way to bring weights in.
DEFAULT_LOADER: dict[Platform | None, Loader] = {Platform.HYPERPOD: Loader.BUCKET_COPY, Platform.PAI_EAS: Loader.FUSE}


#: Loaders each managed platform can use (HyperPod's operator copies from S3; PAI-EAS mounts OSS).
PLATFORM_LOADERS = {Platform.HYPERPOD: (Loader.BUCKET_COPY,), Platform.PAI_EAS: (Loader.FUSE,)}


SHA = re.compile(r"[0-9a-f]{40}")


def read_loader(v: dict[str, Any], cloud: Cloud | None, platform: Platform | None, p: Problems) -> Loader | None:
    """How the weights reach the engine: the stated loader, else the platform's default, if the platform and the
    bucket can feed it."""
    weights = v["weights"]
    if not isinstance(weights, dict) or weights.get("loader") is MISSING:
        return None
    if cloud == Cloud.KUBERNETES:
        return _kubernetes_loader(weights.get("loader"), kubernetes_storage(v).get("type"), p)
    loader: Loader = weights.get("loader") or DEFAULT_LOADER.get(platform, Loader.FUSE)
    if loader == Loader.VOLUME:
        p.add(K + "weights.loader", "mounts a PVC or node path of an existing cluster (cloud kubernetes)", str(loader),
              ", ".join(x for x in Loader if x != Loader.VOLUME))
        return None
    allowed = PLATFORM_LOADERS.get(platform) if platform is not None else None
    if allowed is not None and loader not in allowed:
        p.add(K + "weights.loader", f"platform {platform} cannot load that way", str(loader), ", ".join(allowed))
        return None
    if loader == Loader.STREAMER and cloud is not None and cloud not in STREAMER_CLOUDS:
        p.add(K + "weights.loader", f"the RunAI streamer reads gs://, s3:// and az:// URIs, not {cloud} buckets",
              str(loader), "fuse (the bucket's CSI mount), bucket-copy or huggingface")
        return None
    return loader


#: The loaders each existing-cluster storage type can feed (cloud kubernetes).
STORAGE_LOADERS: dict[WeightSource, tuple[Loader, ...]] = {
    WeightSource.S3: (Loader.STREAMER, Loader.BUCKET_COPY, Loader.HUGGINGFACE),
    WeightSource.PVC: (Loader.VOLUME, Loader.HUGGINGFACE),
    WeightSource.HOST_PATH: (Loader.VOLUME, Loader.HUGGINGFACE),
}


def _kubernetes_loader(given: Any, storage: Any, p: Problems) -> Loader | None:
    """An existing cluster streams an S3-compatible bucket and mounts a PVC or node path (no CSI driver for S3)."""
    if not isinstance(storage, WeightSource):
        return None
    allowed = STORAGE_LOADERS[storage]
    loader: Loader = given or allowed[0]
    if loader not in allowed:
        p.add(K + "weights.loader", f"kubernetes.storage.type {storage} cannot feed that loader", str(loader),
              ", ".join(allowed))
        return None
    return loader


def read_weights(v: dict[str, Any], cloud: Cloud | None, p: Problems, warnings: list[str],
                 loader: Loader | None, speculative: bool) -> WeightsConfig | None:
    """The ``weights`` section: the bucket (and Azure's storage account) under the cloud's naming rules, the pinned
    revisions the sync copies, and the stated bucket figures."""
    w = v["weights"]
    if not isinstance(w, dict):
        return None
    key = K + "weights."
    bucket, account = w.get("bucket"), w.get("account")
    if bucket is None:
        if cloud != Cloud.KUBERNETES or kubernetes_storage(v).get("type") == WeightSource.S3:
            p.add(key + "bucket", "is required" + (" with kubernetes.storage.type s3" if cloud == Cloud.KUBERNETES
                                                    else ""), None, "a string")
        elif cloud == Cloud.KUBERNETES:
            bucket = ""  # the weights are a PVC or a node path
    elif cloud == Cloud.KUBERNETES and kubernetes_storage(v).get("type") not in (WeightSource.S3, None):
        p.add(key + "bucket", "applies with kubernetes.storage.type s3; type "
              f"{kubernetes_storage(v).get('type')} holds the "
              "weights itself", bucket, "unset")
    if isinstance(bucket, str) and bucket and cloud is not None:
        why = bucket_name_problem(cloud, bucket)
        if why:
            p.add(key + "bucket", f"{cloud} would reject this bucket name", bucket, why)
    if cloud == Cloud.AZURE:
        if account is None:
            p.add(key + "account", "is required on Azure: the container lives in a storage account", None,
                  "3-24 lowercase letters and digits")
        elif isinstance(account, str) and (why := storage_account_problem(account)):
            p.add(key + "account", "Azure would reject this storage account name", account, why)
    elif account is not None and cloud is not None:
        p.add(key + "account", f"applies to Azure storage accounts; {cloud} buckets have none", account, "unset")
    if w.get("sync"):
        rev = w.get("revision")
        if rev is None:
            p.add(key + "revision", "is required when sync is true: the Job copies one pinned revision", None,
                  "a 40-character commit SHA (or a tag)")
        elif isinstance(rev, str) and not SHA.fullmatch(rev):
            warnings.append(f"weights.revision {rev!r} is not a commit SHA: a moving branch or tag makes the copy "
                            "unreproducible")
        draft = w.get("draftRevision")
        if speculative and draft is None and K + "speculativeDecoding" not in p.keys():
            p.add(key + "draftRevision", "is required when sync is true and speculativeDecoding is dspark: the Job "
                  "copies one pinned revision of the draft model too", None, "a 40-character commit SHA (or a tag)")
        elif isinstance(draft, str) and not SHA.fullmatch(draft):
            warnings.append(f"weights.draftRevision {draft!r} is not a commit SHA: a moving branch or tag makes the "
                            "copy unreproducible")
        if v["hfToken"] is None:
            warnings.append("weights.sync is true and k3infra:hfToken is not set: the sync Job downloads anonymously "
                            "(rate limits; fails if the repository is gated)")
    _bucket_figures(w, key, cloud, loader, p, node_copy=v.get("nodeWeights") is True)
    if w.get("draftRevision") is not None and not speculative:
        p.add(key + "draftRevision", "applies with speculativeDecoding dspark, which this stack does not use",
              w["draftRevision"], "unset, or speculativeDecoding: dspark")
    if w.get("retainOnDestroy") is False:
        warnings.append("weights.retainOnDestroy is false: `pulumi destroy` deletes the bucket and the weights in it")
    if p.keys() & {key + f for f in w} or not isinstance(bucket, str) or loader is None:
        return None
    return WeightsConfig(
        bucket=bucket,
        account=account,
        prefix=w["prefix"],
        sync=bool(w["sync"]),
        revision=w.get("revision"),
        draft_revision=w.get("draftRevision"),
        loader=loader,
        bandwidth_gbps=w.get("bandwidthGbps"),
        retain_on_destroy=bool(w["retainOnDestroy"]),
    )


def _bucket_figures(w: Mapping[str, Any], key: str, cloud: Cloud | None, loader: Loader | None, p: Problems,
                    node_copy: bool = False) -> None:
    """A stated bucket figure that no estimate would use is a mistake, not a setting. ``node_copy``: the stack asks
    for the weights on the nodes, whose copy reads the bucket at the node's share of its egress (sizing.stack _fill)."""
    if (ingress := w.get("bucketIngressGbps")) is not None and not w.get("sync"):
        p.add(key + "bucketIngressGbps", "is what the bucket takes in from the weight sync, which this stack does not "
              "run", ingress, "unset, or weights.sync: true")
    egress = w.get("bucketEgressGbps")
    if egress is None or loader is None or cloud is None:
        return
    if not sz.reads_the_bucket(loader, cloud) and not node_copy:
        p.add(key + "bucketEgressGbps", f"is what the bucket serves to the loaders that read it (the RunAI streamer, "
              f"the cloud's FUSE client) and to the nodes' copy (nodeWeights); loader {loader} runs at its stated "
              "range", egress, "unset, or nodeWeights: true")
    elif w.get("bandwidthGbps") is not None:
        p.add(key + "bucketEgressGbps", "has no effect beside weights.bandwidthGbps, which sets the load's rate "
              "itself", egress, "one of the two")
