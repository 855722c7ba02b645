"""The engine's settings: the image and the platforms it is built for, the engine release, the load format,
speculative decoding, the engine cache, and the weights kept on the node."""

import re
from typing import Any, Mapping

from ..catalog import ENGINE_CACHE_BY_DEFAULT, IMAGES, KUBERNETES_PLATFORMS, Accelerator, CpuArch, Loader, Platform
from ..catalog.node_local import FILLED_BY_THE_SERVER_POD, LOCAL_READ, NODE_DIRECTORIES, LocalRead
from ..sizing import NodeKeeping
from .problems import Problems
from .schema import K, is_given


def read_image(v: dict[str, Any], engine: Any, accel: Accelerator | None, p: Problems,
               warnings: list[str]) -> tuple[str, frozenset[CpuArch]]:
    """The engine image and the CPU architectures it is built for (the catalog's, or ``imagePlatforms``): one the
    accelerator's nodes can run."""
    if engine is None:
        return "", frozenset()
    image = v["image"] if isinstance(v["image"], str) else engine.default_image
    known = IMAGES.get(image)
    if known is not None and known.engine != engine.name:
        p.add(K + "image", f"is a {known.engine} image, and the engine is {engine.name}", image,
              ", ".join(i for i, x in IMAGES.items() if x.engine == engine.name) or "an image of the engine")
    declared = v["imagePlatforms"]
    if isinstance(declared, list) and declared:
        platforms = frozenset(declared)
        if known is not None and not platforms <= known.platforms:
            extra = ", ".join(sorted(platforms - known.platforms))
            warnings.append(f"imagePlatforms declares {extra} for {image}, which no source in the catalog confirms: "
                            "check it with docker manifest inspect before deploying (002 caveat 2)")
    elif known is not None:
        platforms = known.platforms
    else:
        if declared is None:
            p.add(K + "imagePlatforms", f"is required for {image}, which the catalog does not know", None,
                  "a list of amd64, arm64 (as docker manifest inspect shows them)")
        return image, frozenset()
    if accel is not None and accel.cpu_arch not in platforms:
        have = ", ".join(sorted(platforms)) or "none"
        p.add(K + "image",
              f"has no known {accel.cpu_arch} build (known: {have}), and {accel.sku} nodes are {accel.cpu_arch}"
              + (" (Grace); build the engine for arm64 (002 appendix item 1)"
                 if accel.cpu_arch == CpuArch.ARM64 else ""),
              image, f"an image with a linux/{accel.cpu_arch} build, declared in k3infra:imagePlatforms")
    return image, platforms


def _release(version: str) -> tuple[int, ...]:
    """The numeric part of a release number (0.5.10.post1 -> (0, 5, 10))."""
    numeric = re.match(r"[0-9]+(\.[0-9]+)*", version).group(0)  # type: ignore[union-attr]
    return tuple(int(x) for x in numeric.split("."))


def read_engine_version(v: dict[str, Any], engine: Any, image: str, p: Problems, warnings: list[str]) -> str:
    """The engine release of the image: a catalog image's is known and cannot be restated otherwise; a user
    image's is ``engineVersion``, at least the first release that serves the model. Command lines are validated
    against ``Engine.release`` (tests/engines); another release is warned about."""
    if engine is None:
        return ""
    known = IMAGES.get(image)
    given = v["engineVersion"] if isinstance(v["engineVersion"], str) else None
    if known is not None:
        if given is not None and given != known.engine_version:
            p.add(K + "engineVersion", f"{image} is a catalog image with {engine.name} {known.engine_version}", given,
                  known.engine_version)
        return known.engine_version
    version = given or engine.release
    if _release(version) < _release(engine.min_release):
        p.add(K + "engineVersion", f"is older than the first {engine.name} release that serves the catalog's model "
              f"({engine.sources.get('min_release', '')})", version, f"{engine.min_release} or later")
    elif version != engine.release:
        warnings.append(f"engineVersion {version}: k3infra validates its {engine.name} command lines against "
                        f"{engine.release} (the release's own parser, tests/engines); check them against {version}")
    elif given is None:
        warnings.append(f"{image} states no engineVersion: k3infra assumes {engine.name} {engine.release}, the "
                        "release it validates its command lines against; set engineVersion to what the image holds")
    return version


def read_load_format(v: dict[str, Any], engine: Any, loader: Loader | None, p: Problems) -> str:
    """The engine's load format: the stated one if the engine runs it and the loader can feed it, else the
    loader's (the RunAI streamer) or the engine's default."""
    if engine is None:
        return ""
    given = v["loadFormat"]
    default = "runai_streamer" if loader == Loader.STREAMER else engine.default_load_format
    if not isinstance(given, str):
        return default
    allowed = ", ".join(engine.load_formats)
    if given.strip().lower() == "mxfp4":
        p.add(K + "loadFormat", "MXFP4 is how the weights are stored, not how they are loaded (002 caveat 1: the "
              "seed's prose says MXFP4, its YAML says fastsafetensors)", given, allowed)
    elif given not in engine.load_formats:
        p.add(K + "loadFormat", f"is not a load format k3infra runs on {engine.name}", given, allowed)
    elif loader == Loader.STREAMER and given != "runai_streamer":
        p.add(K + "loadFormat", "the streamer loader reads the bucket URI through the RunAI streamer; "
              f"{given} cannot read object storage directly (002 appendix item 4)", given, "runai_streamer")
    return given


def read_speculative(v: dict[str, Any], engine: Any, model: Any, platform: Platform | None, p: Problems) -> bool:
    """Whether the stack decodes speculatively with DSPARK: the model needs a draft model for the engine, and the
    platform must mount it."""
    if v["speculativeDecoding"] != "dspark":
        return False
    if engine is not None and model is not None and model.draft_model_for(engine.name) is None:
        p.add(K + "speculativeDecoding", f"{model.hf_id} has no {engine.name} draft model in the catalog", "dspark",
              "none")
    if platform is not None and platform not in KUBERNETES_PLATFORMS:
        p.add(K + "speculativeDecoding", f"platform {platform} mounts the model alone; the DSPARK draft model is "
              "synced next to it and mounted only on the Kubernetes platforms", "dspark",
              "none, or a Kubernetes platform (eks, aks, gke, ack)")
    return True


def read_engine_cache(v: Mapping[str, Any], platform: Platform | None) -> bool:
    """engineCache as given, else the platform's default (catalog.ENGINE_CACHE_BY_DEFAULT); never off Kubernetes."""
    if platform not in KUBERNETES_PLATFORMS:
        return False
    given = v.get("engineCache")
    return bool(given) if is_given(given) else platform in ENGINE_CACHE_BY_DEFAULT


def privileged_warning(platform: Platform | None, node_weights: bool, engine_cache: bool) -> str | None:
    """The warning where ``nodeWeights`` or ``engineCache`` turns a platform's serving namespace from baseline to
    privileged (None where the pools run the server privileged anyway, catalog ENGINE_CACHE_BY_DEFAULT)."""
    if platform not in NODE_WEIGHT_PLATFORMS or platform in ENGINE_CACHE_BY_DEFAULT:
        return None
    keys = [f"k3infra:{k}" for k, on in (("nodeWeights", node_weights), ("engineCache", engine_cache)) if on]
    if not keys:
        return None
    verb = "keeps" if len(keys) == 1 else "keep"
    who = ("the server pod's init container fills them with a role that reads the weights' prefix only"
           if platform in FILLED_BY_THE_SERVER_POD else
           "the node agent that fills them runs as root on every GPU node with the bucket's writer identity")
    return (f"{' and '.join(keys)} {verb} files in a host directory of the GPU nodes (a hostPath, which Pod "
            f"Security's baseline forbids): the serving namespace enforces the privileged level instead of baseline, "
            f"and {who}")


def check_engine_cache_platform(v: dict[str, Any], platform: Platform | None, p: Problems) -> None:
    """``engineCache: true`` needs a node directory the stack's own server pods mount: Kubernetes platforms only."""
    if v.get("engineCache") is True and platform is not None and platform not in KUBERNETES_PLATFORMS:
        p.add(K + "engineCache", f"keeps the engine's caches in a node directory of the server pods the stack "
              f"creates; on {platform} the platform runs the server", True,
              "unset or false, or a Kubernetes platform (" + ", ".join(sorted(KUBERNETES_PLATFORMS)) + ")")


NODE_WEIGHT_LOADERS = frozenset({Loader.FUSE, Loader.STREAMER, Loader.BUCKET_COPY})
"""The loaders that read the bucket, whose reads a node copy replaces (volume reads a volume, huggingface the Hub)."""


NODE_WEIGHT_PLATFORMS = KUBERNETES_PLATFORMS | FILLED_BY_THE_SERVER_POD
"""The platforms whose server pods k3infra can give a node directory: the stack's own pods, and HyperPod's, which the
operator builds from the InferenceEndpointConfig's volumes and init container (catalog.hyperpod NVME_PAGE)."""


def read_node_weights(v: Mapping[str, Any], platform: Platform | None, accel: Accelerator,
                      loader: Loader | None) -> NodeKeeping:
    """What the GPU nodes keep across pods: the weights on their local NVMe where the platform gives a directory on
    it (``nodeWeights`` as given, else on where the pool runs the server privileged anyway, catalog
    ENGINE_CACHE_BY_DEFAULT: the directory is a hostPath too), and the engine's caches through the bucket wherever
    the engine cache is on (the node agent saves and restores them). Both need the sync's marker and manifest.
    Where the nodes keep none on a Kubernetes platform whose machine has local NVMe, its read rate too, for the
    restart a node copy would give (sizing.restart ``with_node_copy``)."""
    synced = isinstance(v.get("weights"), dict) and bool(v["weights"].get("sync"))
    read, path, why = _node_copy(v, platform, accel, loader)
    if read is not None and not synced:
        read, path, why = None, "", ("weights.sync is false: the bucket holds no completion marker and manifest of "
                                     "the copier's to verify a node copy against")
    would = (LOCAL_READ.get(accel.sku) if read is None and platform in KUBERNETES_PLATFORMS
             and loader in NODE_WEIGHT_LOADERS else None)
    return NodeKeeping(read=read, directory=path, why_none=why, warm_caches=read_engine_cache(v, platform) and synced,
                       would_read=would, filled_by_the_pod=read is not None and platform in FILLED_BY_THE_SERVER_POD)


def _node_copy(v: Mapping[str, Any], platform: Platform | None, accel: Accelerator,
               loader: Loader | None) -> tuple[LocalRead | None, str, str]:
    """(the node's local read rate, the host directory, "") where the nodes keep the weights; (None, "", why) else."""
    if platform is None:
        return None, "", ""
    place = NODE_DIRECTORIES[platform]
    stated = v["kubernetes"].get("nodeLocalPath") if isinstance(v.get("kubernetes"), dict) else None
    path = stated if platform == Platform.EXISTING_CLUSTER and isinstance(stated, str) else place.path
    if platform not in NODE_WEIGHT_PLATFORMS or path is None:
        return None, "", place.why_none
    if loader not in NODE_WEIGHT_LOADERS:
        return None, "", f"loader {loader} reads no bucket: the node has the weights where it reads them already"
    read = LOCAL_READ.get(accel.sku)
    if read is None:
        return None, "", f"{accel.sku} has no local NVMe in the catalog (catalog.node_local LOCAL_READ)"
    given = v.get("nodeWeights")
    if is_given(given) and not given:
        return None, "", "k3infra:nodeWeights is false"
    if not is_given(given) and platform not in ENGINE_CACHE_BY_DEFAULT and platform != Platform.EXISTING_CLUSTER:
        return None, "", (f"k3infra:nodeWeights is off by default on {platform}: the node directory is a hostPath, "
                          "which makes the serving namespace Pod Security privileged (nodeWeights: true keeps the "
                          f"weights in {path})")
    return read, path, ""


def check_node_weights_platform(v: dict[str, Any], platform: Platform | None, p: Problems) -> None:
    """``nodeWeights: true`` needs a node directory on local NVMe the stack's own server pods mount."""
    if v.get("nodeWeights") is not True or platform is None:
        return
    place = NODE_DIRECTORIES[platform]
    stated = v["kubernetes"].get("nodeLocalPath") if isinstance(v.get("kubernetes"), dict) else None
    if platform not in NODE_WEIGHT_PLATFORMS or (place.path is None and not (
            platform == Platform.EXISTING_CLUSTER and isinstance(stated, str))):
        p.add(K + "nodeWeights", f"keeps the weights on the GPU nodes' local NVMe; on {platform}: {place.why_none}",
              True, "unset or false" + (", or kubernetes.nodeLocalPath" if platform == Platform.EXISTING_CLUSTER
                                         else ", or a platform with one (gke, eks, hyperpod)"))
