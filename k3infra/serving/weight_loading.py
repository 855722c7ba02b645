"""How the weights (and the draft model) reach the engine container, per loader: the store's CSI mount, a volume,
the RunAI streamer reading the URI, a copy to local disk, or the engine's own download."""

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import MODELS, EngineName, Loader
from . import pods
from .contract import WeightStore
from .copier_pods import credential_env
from .server_args import HF_TOKEN_SECRET_KEY, ModelServerArgs

core = k8s.core.v1
meta = k8s.meta.v1


WEIGHTS_MOUNT = "/mnt/models"
"""Where the weights appear in the engine container (CSI mount, local copy or Hugging Face cache)."""
DRAFT_MOUNT = "/mnt/draft"
"""Where a copied draft model appears when the weights are streamed (DSPARK, 000)."""


COPY_TOOL_RESOURCES = ("2", "8Gi", "8", "32Gi")
"""Requests and limits (cpu, memory, cpu limit, memory limit) of the bucket-copy init containers."""


def sibling(path: str, model_id: str, other_id: str) -> str:
    """The path of ``other_id`` next to ``model_id``: PREFIX/<model id> becomes PREFIX/<other id>."""
    if not path.endswith(model_id):
        raise ValueError(f"{path!r} does not end with the model id {model_id!r}")
    return path[: len(path) - len(model_id)] + other_id


def sibling_uri(uri: pulumi.Input[str], model_id: str, other_id: str) -> pulumi.Output[str]:
    """The bucket URI of ``other_id`` next to the model's URI."""
    return pulumi.Output.from_input(uri).apply(lambda u: sibling(u.rstrip("/"), model_id, other_id))


class WeightLoading:
    """How the weights (and the draft model) reach the engine container, per loader."""

    def __init__(self, name: str, args: ModelServerArgs, opts: pulumi.ResourceOptions):
        store, loader = args["store"], args["loader"]
        model = MODELS[args["model"]]
        subpath = store["model_subpath"].strip("/")
        draft = model.draft_model_for(EngineName(args["engine"])) if args.get("speculative_decoding") else None
        self.volumes: list[core.VolumeArgs] = []
        self.mounts: list[core.VolumeMountArgs] = []
        self.init_containers: list[core.ContainerArgs] = []
        self.env: dict[str, pulumi.Input[str]] = {}
        self.secret_env: list[core.EnvVarArgs] = []
        self.pod_annotations: dict[str, str] = {}
        self.model_path: pulumi.Input[str]
        self.draft_path: pulumi.Input[str] | None = None

        if loader == Loader.FUSE:
            self.volumes.append(self._fuse_volume(name, args, opts))
            self.mounts.append(core.VolumeMountArgs(name="weights", mount_path=WEIGHTS_MOUNT, read_only=True))
            self.model_path = f"{WEIGHTS_MOUNT}/{subpath}"
            if draft:
                self.draft_path = f"{WEIGHTS_MOUNT}/{sibling(subpath, model.hf_id, draft.hf_id)}"
        elif loader == Loader.VOLUME:
            volume = store.get("volume")
            if not volume:
                raise pulumi.InputPropertyError("store.volume", "loader volume mounts the store's volume, and the "
                                                "weight store has none")
            if volume.get("persistent_volume"):
                claim = self._claim(name, args, volume.get("persistent_volume") or "", opts)
                source = core.VolumeArgs(name="weights", persistent_volume_claim=core.PersistentVolumeClaimVolumeSourceArgs(
                    claim_name=claim, read_only=True))
            else:
                source = core.VolumeArgs(name="weights", host_path=core.HostPathVolumeSourceArgs(
                    path=volume.get("host_path") or "", type="Directory"))
            self.volumes.append(source)
            self.mounts.append(core.VolumeMountArgs(name="weights", mount_path=WEIGHTS_MOUNT, read_only=True))
            self.model_path = f"{WEIGHTS_MOUNT}/{subpath}"
            if draft:
                self.draft_path = f"{WEIGHTS_MOUNT}/{sibling(subpath, model.hf_id, draft.hf_id)}"
        elif loader == Loader.STREAMER:
            self.model_path = store["uri"]
            self.env.update(store.get("streamer_env") or {})
            self.secret_env += credential_env(store)
            if draft:
                self._copy(name, store, "draft", DRAFT_MOUNT, sibling_uri(store["uri"], model.hf_id, draft.hf_id),
                           draft.weight_bytes)
                self.draft_path = DRAFT_MOUNT
        elif loader == Loader.BUCKET_COPY:
            self._copy(name, store, "weights", WEIGHTS_MOUNT, store["uri"], model.weight_bytes
                       + (draft.weight_bytes if draft else 0), dest=f"{WEIGHTS_MOUNT}/{subpath}")
            self.model_path = f"{WEIGHTS_MOUNT}/{subpath}"
            if draft:
                draft_sub = sibling(subpath, model.hf_id, draft.hf_id)
                self.init_containers.append(self._copy_container(
                    store, "copy-draft", sibling_uri(store["uri"], model.hf_id, draft.hf_id),
                    f"{WEIGHTS_MOUNT}/{draft_sub}", "weights", WEIGHTS_MOUNT))
                self.draft_path = f"{WEIGHTS_MOUNT}/{draft_sub}"
        else:  # Loader.HUGGINGFACE: the engine downloads on every start (002 §2.1 advises against it)
            self.volumes.append(core.VolumeArgs(name="weights", empty_dir=core.EmptyDirVolumeSourceArgs(
                size_limit=pods.gib(model.weight_bytes * 1.1))))
            self.mounts.append(core.VolumeMountArgs(name="weights", mount_path=WEIGHTS_MOUNT))
            self.env["HF_HOME"] = WEIGHTS_MOUNT
            self.model_path = model.hf_id
            if draft:
                self.draft_path = draft.hf_id
            if args.get("hf_token_secret"):
                self.secret_env.append(pods.secret_env("HF_TOKEN", args["hf_token_secret"],  # pyright: ignore[reportTypedDictNotRequiredAccess]
                                                       HF_TOKEN_SECRET_KEY))

    def _fuse_volume(self, name: str, args: ModelServerArgs, opts: pulumi.ResourceOptions) -> core.VolumeArgs:
        """The bucket through the cloud's CSI driver: an inline volume, or a static volume's claim; the pod
        annotations the driver needs."""
        fuse = args["store"].get("fuse")
        if not fuse:
            raise pulumi.InputPropertyError("store.fuse", "loader fuse mounts the bucket through the cloud's CSI "
                                            "driver, and the weight store has no CSI mount")
        self.pod_annotations.update(fuse.get("pod_annotations") or {})
        if fuse["inline"]:
            attributes = dict(fuse["volume_attributes"])
            if fuse.get("mount_options"):
                attributes["mountOptions"] = ",".join(fuse.get("mount_options") or ())
            return core.VolumeArgs(name="weights", csi=core.CSIVolumeSourceArgs(
                driver=fuse["driver"], read_only=True, volume_attributes=attributes))
        claim = self._static_volume(name, args, opts)
        return core.VolumeArgs(name="weights", persistent_volume_claim=core.PersistentVolumeClaimVolumeSourceArgs(
            claim_name=claim, read_only=True))

    def _copy(self, name: str, store: WeightStore, volume: str, mount: str, source: pulumi.Input[str], nbytes: int,
              dest: str | None = None) -> None:
        self.volumes.append(core.VolumeArgs(name=volume, empty_dir=core.EmptyDirVolumeSourceArgs(
            size_limit=pods.gib(nbytes * 1.1))))
        self.mounts.append(core.VolumeMountArgs(name=volume, mount_path=mount, read_only=True))
        self.init_containers.append(self._copy_container(store, f"copy-{volume}", source, dest or mount, volume, mount))

    @staticmethod
    def _copy_container(store: WeightStore, cname: str, source: pulumi.Input[str], dest: str, volume: str,
                        mount: str) -> core.ContainerArgs:
        tool = store["download"]
        env: dict[str, pulumi.Input[str]] = {"SOURCE": source, "DEST": dest, "HOME": "/tmp"}
        env.update(tool.get("env") or {})
        cpu, mem, cpu_limit, mem_limit = COPY_TOOL_RESOURCES
        return core.ContainerArgs(
            name=cname, image=tool["image"], image_pull_policy="IfNotPresent", command=list(tool["command"]),
            env=[*pods.env_list(env), *credential_env(store)], resources=pods.small_resources(cpu, mem, cpu_limit, mem_limit),
            security_context=pods.container_security(),
            volume_mounts=[core.VolumeMountArgs(name=volume, mount_path=mount)],
        )

    @staticmethod
    def _claim(name: str, args: ModelServerArgs, volume: str, opts: pulumi.ResourceOptions) -> pulumi.Output[str]:
        """A claim of an existing PersistentVolume by name, read-only. It asks for 1Gi: a claim binds to a named
        volume of at least its request and the access modes it asks for (Kubernetes "Persistent Volumes",
        reserving a PersistentVolume)."""
        pvc = core.PersistentVolumeClaim(
            f"{name}-weights-claim",
            metadata=meta.ObjectMetaArgs(name=f"{name}-weights", namespace=args["namespace"],
                                         labels=pods.labels(name, "weights")),
            spec=core.PersistentVolumeClaimSpecArgs(
                access_modes=["ReadOnlyMany"], storage_class_name="", volume_name=volume,
                resources=core.VolumeResourceRequirementsArgs(requests={"storage": "1Gi"})),
            opts=opts)
        return pvc.metadata.apply(lambda m: m.name or f"{name}-weights")

    @staticmethod
    def _static_volume(name: str, args: ModelServerArgs, opts: pulumi.ResourceOptions) -> pulumi.Output[str]:
        """A read-only PersistentVolume bound to one claim (Mountpoint for S3, BlobFuse, ossfs)."""
        fuse = args["store"].get("fuse")
        assert fuse is not None
        if not fuse.get("volume_handle"):
            raise pulumi.InputPropertyError("store.fuse.volume_handle", "a static CSI volume needs a volume handle")
        ns = args["namespace"]
        capacity = fuse.get("capacity") or pods.gib(MODELS[args["model"]].weight_bytes * 2)
        pv_name = f"{ns}-{name}-weights"
        pv = core.PersistentVolume(
            f"{name}-weights",
            metadata=meta.ObjectMetaArgs(name=pv_name, labels=pods.labels(name, "weights")),
            spec=core.PersistentVolumeSpecArgs(
                capacity={"storage": capacity},
                access_modes=["ReadOnlyMany"],
                persistent_volume_reclaim_policy="Retain",
                storage_class_name="",
                mount_options=list(fuse.get("mount_options") or ()) or None,
                claim_ref=core.ObjectReferenceArgs(namespace=ns, name=f"{name}-weights"),
                csi=core.CSIPersistentVolumeSourceArgs(driver=fuse["driver"], volume_handle=fuse["volume_handle"],  # pyright: ignore[reportTypedDictNotRequiredAccess]
                                                       read_only=True, volume_attributes=dict(fuse["volume_attributes"])),
            ),
            opts=opts,
        )
        pvc = core.PersistentVolumeClaim(
            f"{name}-weights-claim",
            metadata=meta.ObjectMetaArgs(name=f"{name}-weights", namespace=ns, labels=pods.labels(name, "weights")),
            spec=core.PersistentVolumeClaimSpecArgs(
                access_modes=["ReadOnlyMany"], storage_class_name="", volume_name=pv_name,
                resources=core.VolumeResourceRequirementsArgs(requests={"storage": capacity}),
            ),
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[pv])),
        )
        return pvc.metadata.apply(lambda m: m.name or f"{name}-weights")
