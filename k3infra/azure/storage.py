"""BlobWeightBucket: the storage account and private container that hold the weights, and the two identities
that reach them from the cluster through workload identity (002 §4.3).

Secure by default: no public blob access, no shared keys (Entra ID only), TLS 1.2, a private container. The
model server's identity reads (Storage Blob Data Reader); only the sync Job's identity writes (Storage Blob
Data Contributor). Each identity trusts exactly one Kubernetes service account through a federated identity
credential (subject ``system:serviceaccount:NAMESPACE:NAME``). The account, its container and their own
resource group survive ``pulumi destroy`` unless ``retain_on_destroy`` is false.
"""

import re
from typing import Mapping, NotRequired, Optional, Sequence, TypedDict

import pulumi
from pulumi_azure_native import managedidentity, resources, storage

from ..catalog.transfer import GRANT_PROPAGATION
from ..catalog.types import Cloud
from ..serving.contract import (
    SERVER_SERVICE_ACCOUNT,
    SYNC_SERVICE_ACCOUNT,
    CopyTool,
    CsiVolume,
    ServiceAccountSpec,
    WeightStore,
)
from . import roles
from ..component_args import reject_unknown

WORKLOAD_IDENTITY_AUDIENCE = "api://AzureADTokenExchange"
"""The audience Entra ID expects in a Kubernetes service account token (AKS workload identity)."""

CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id"
"""Service account annotation: which managed identity the workload identity webhook issues tokens for."""

USE_LABEL = "azure.workload.identity/use"
"""Pod label that makes the workload identity webhook inject the token and AZURE_* variables."""

BLOB_CSI_DRIVER = "blob.csi.azure.com"

DEFAULT_COPY_IMAGE = "docker.io/library/python:3.12.11-slim-bookworm"
"""The image the sync Job's downloader already uses (amd64 and arm64; python3 and tar): azcopy is fetched into it
at start. Microsoft publishes azcopy as a tarball, not as a public container image."""

COPY_SCRIPT = r"""set -eu
mkdir -p /tmp/azcopy
python3 - <<'PY'
import io, os, platform, tarfile, urllib.request
arm = platform.machine() in ("aarch64", "arm64")
url = "https://aka.ms/downloadazcopy-v10-linux" + ("-arm64" if arm else "")
with tarfile.open(fileobj=io.BytesIO(urllib.request.urlopen(url, timeout=300).read())) as archive:
    member = next(m for m in archive.getmembers() if m.name.endswith("/azcopy"))
    with open("/tmp/azcopy/azcopy", "wb") as out:
        out.write(archive.extractfile(member).read())
os.chmod("/tmp/azcopy/azcopy", 0o755)
PY
export PATH="/tmp/azcopy:$PATH" AZCOPY_AUTO_LOGIN_TYPE=WORKLOAD
blob() {
  case "$1" in
    az://*) echo "https://${AZURE_STORAGE_ACCOUNT_NAME}.blob.core.windows.net/${1#az://}" ;;
    *) echo "$1" ;;
  esac
}
azcopy sync "$(blob "$SOURCE")" "$(blob "$DEST")" --recursive=true
"""
"""Resumable copy between a local directory and the container: ``azcopy sync`` skips what is already there.
azcopy (the latest 10.x for the node's CPU, from Microsoft's download link) signs in with the pod's workload
identity (``AZCOPY_AUTO_LOGIN_TYPE=WORKLOAD``, azcopy 10.25+); ``az://CONTAINER/PATH`` becomes the account's
blob URL. Runs as a non-root user with a read-only root file system: everything it writes is under /tmp."""

_CONTAINER = re.compile(r"[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]")
_ACCOUNT = re.compile(r"[a-z0-9]{3,24}")


class BlobWeightBucketArgs(TypedDict):
    """Arguments of :class:`BlobWeightBucket`."""

    resource_group_name: str
    """Resource group k3infra creates for the storage account and the identities. It is kept with the account on
    `pulumi destroy` (deleting a resource group deletes everything in it, retained or not)."""
    location: pulumi.Input[str]
    """Region: the cluster's, so the weights stream over Azure's network in-region (002 §4.3)."""
    account_name: str
    """Storage account name (3-24 lowercase letters and digits, globally unique)."""
    container_name: str
    """Blob container that holds the weights."""
    model_subpath: str
    """The model directory inside the container: PREFIX/<Hugging Face id>."""
    oidc_issuer_url: pulumi.Input[str]
    """The cluster's OIDC issuer (``AksCluster.oidc_issuer_url``): what the federated credentials trust."""
    namespace: str
    """Kubernetes namespace of the server and the sync Job."""
    reader_service_account: NotRequired[Optional[str]]
    """Service account of the server (read-only). Default: ``k3-server``."""
    writer_service_account: NotRequired[Optional[str]]
    """Service account of the sync Job (the only writer). Default: ``k3-weight-sync``."""
    premium: NotRequired[Optional[bool]]
    """Premium block blob account (BlockBlobStorage, Premium_LRS) for streaming throughput, as the AKS RunAI
    streamer guide uses. Default: true; false gives a Standard_LRS StorageV2 account."""
    retain_on_destroy: NotRequired[Optional[bool]]
    """Keep the account and container (and the weights in them) on `pulumi destroy`. Default: true."""
    copy_image: NotRequired[Optional[str]]
    """Image the upload/download copy tools run in (needs sh and python3). Default: python:3.12 slim (Debian)."""
    tags: NotRequired[Optional[Mapping[str, pulumi.Input[str]]]]
    """Tags on every Azure resource the component creates. Default: none."""


class BlobWeightBucket(pulumi.ComponentResource):
    """A private Blob container for the weights, a reader identity for the server, a writer identity for the sync."""

    resource_group_name: pulumi.Output[str]
    """The weights' resource group (retained with the account)."""
    account_name: pulumi.Output[str]
    """Storage account name."""
    container_name: pulumi.Output[str]
    """Container name."""
    uri: pulumi.Output[str]
    """``az://CONTAINER/PREFIX/<model>``: the model URI the RunAI streamer reads (002 §4.3)."""
    reader_client_id: pulumi.Output[str]
    """Client id of the server's identity."""
    writer_client_id: pulumi.Output[str]
    """Client id of the sync Job's identity."""

    def __init__(self, name: str, args: BlobWeightBucketArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("k3infra:index:BlobWeightBucket", name, None, opts)
        reject_unknown(args, BlobWeightBucketArgs)
        reader_sa, writer_sa = _checked(args)
        group, account, container = self._storage(name, args)
        reader, reader_access = self._identity(name, args, group.name, container, "reader", reader_sa,
                                               roles.BuiltInRole.STORAGE_BLOB_DATA_READER, "Model server: read")
        writer, writer_access = self._identity(name, args, group.name, container, "writer", writer_sa,
                                               roles.BuiltInRole.STORAGE_BLOB_DATA_CONTRIBUTOR,
                                               "Weight sync Job: write")
        uri = f"az://{args['container_name']}/{args['model_subpath'].strip('/')}"
        self.store: WeightStore = _store(args, group.name, uri, reader_sa, reader, writer_sa, writer)
        """What serving needs: URI, service accounts, CSI mount, streamer and copier environment, the copy tool."""
        self.identity_resources: Sequence[pulumi.Resource] = [*reader_access, *writer_access]
        """Federated credentials and role assignments: pods that use the identities wait for them."""
        self.resource_group = group
        self.resource_group_name = group.name
        self.storage_account = account
        self.container = container
        self.account_name = account.name
        self.container_name = container.name
        self.uri = pulumi.Output.from_input(uri)
        self.reader_client_id = reader.client_id
        self.writer_client_id = writer.client_id
        self.register_outputs({
            "resource_group_name": self.resource_group_name,
            "account_name": self.account_name,
            "container_name": self.container_name,
            "uri": self.uri,
            "reader_client_id": self.reader_client_id,
            "writer_client_id": self.writer_client_id,
        })

    def _storage(self, name: str, args: BlobWeightBucketArgs) -> tuple[resources.ResourceGroup,
                                                                        storage.StorageAccount, storage.BlobContainer]:
        """The weights' resource group, storage account (Entra ID only, no public blobs) and private container, kept
        on ``pulumi destroy`` unless ``retain_on_destroy`` is false."""
        account_name, container_name = args["account_name"], args["container_name"]
        premium = args.get("premium") is not False
        tags = dict(args.get("tags") or {})
        location = args["location"]
        kept = pulumi.ResourceOptions(parent=self, retain_on_delete=args.get("retain_on_destroy") is not False)
        group = resources.ResourceGroup(
            f"{name}-rg",
            resources.ResourceGroupArgs(resource_group_name=args["resource_group_name"], location=location, tags=tags),
            opts=kept,
        )
        rg = group.name

        account = storage.StorageAccount(
            f"{name}-account",
            storage.StorageAccountArgs(
                resource_group_name=rg,
                account_name=account_name,
                location=location,
                kind=storage.Kind.BLOCK_BLOB_STORAGE if premium else storage.Kind.STORAGE_V2,
                sku=storage.SkuArgs(name=storage.SkuName.PREMIUM_LRS if premium else storage.SkuName.STANDARD_LRS),
                allow_blob_public_access=False,
                # Stated, not defaulted: the cluster reaches the account over its public endpoint, because AKS
                # creates the cluster's virtual network itself and leaves no subnet for a private endpoint or a
                # service endpoint (the plan says so). Entra ID only, so the endpoint takes no anonymous or key access.
                public_network_access=storage.PublicNetworkAccess.ENABLED,
                allow_shared_key_access=False,
                default_to_o_auth_authentication=True,
                allow_cross_tenant_replication=False,
                minimum_tls_version=storage.MinimumTlsVersion.TLS1_2,
                enable_https_traffic_only=True,
                tags=tags,
            ),
            opts=kept,
        )
        container = storage.BlobContainer(
            f"{name}-container",
            storage.BlobContainerArgs(
                resource_group_name=rg,
                account_name=account.name,
                container_name=container_name,
                public_access=storage.PublicAccess.NONE,
            ),
            opts=kept,
        )
        return group, account, container

    def _identity(self, name: str, args: BlobWeightBucketArgs, rg: pulumi.Input[str],
                  container: storage.BlobContainer, role_name: str, service_account: str, role: roles.BuiltInRole,
                  what: str) -> tuple[managedidentity.UserAssignedIdentity, list[pulumi.Resource]]:
        """A managed identity federated with the Kubernetes service account, and its role on the container."""
        child = pulumi.ResourceOptions(parent=self)
        namespace = args["namespace"]
        uami = managedidentity.UserAssignedIdentity(
            f"{name}-{role_name}",
            resource_group_name=rg,
            resource_name_=f"{args['account_name']}-{role_name}",
            location=args["location"],
            tags=dict(args.get("tags") or {}),
            opts=child,
        )
        federation = managedidentity.FederatedIdentityCredential(
            f"{name}-{role_name}-federation",
            resource_group_name=rg,
            resource_name_=uami.name,
            federated_identity_credential_resource_name=f"{namespace}-{service_account}",
            issuer=args["oidc_issuer_url"],
            subject=f"system:serviceaccount:{namespace}:{service_account}",
            audiences=[WORKLOAD_IDENTITY_AUDIENCE],
            opts=child,
        )
        access = roles.assign(
            f"{name}-{role_name}-access",
            role=role,
            principal_id=uami.principal_id,
            scope=container.id,
            description=f"{what} the model weights in container {args['container_name']}",
            opts=child,
        )
        return uami, [federation, access]


def _checked(args: BlobWeightBucketArgs) -> tuple[str, str]:
    """The reader's and the writer's service accounts, once the names Azure takes are checked."""
    account_name, container_name = args["account_name"], args["container_name"]
    if not _ACCOUNT.fullmatch(account_name):
        raise pulumi.InputPropertyError("account_name", f"{account_name!r}: storage account names are 3-24 "
                                        "lowercase letters and digits")
    if not _CONTAINER.fullmatch(container_name):
        raise pulumi.InputPropertyError("container_name", f"{container_name!r}: container names are 3-63 "
                                        "lowercase letters, digits and single hyphens, starting and ending with "
                                        "a letter or digit")
    reader_sa = args.get("reader_service_account") or SERVER_SERVICE_ACCOUNT
    writer_sa = args.get("writer_service_account") or SYNC_SERVICE_ACCOUNT
    if reader_sa == writer_sa:
        raise pulumi.InputPropertyError("writer_service_account", "the reader and the writer must be different "
                                        "service accounts: only the sync Job may write")
    return reader_sa, writer_sa


def _store(args: BlobWeightBucketArgs, rg: pulumi.Input[str], uri: str, reader_sa: str,
           reader: managedidentity.UserAssignedIdentity, writer_sa: str,
           writer: managedidentity.UserAssignedIdentity) -> WeightStore:
    """What serving needs: the URI, the identities' service accounts, the blobfuse2 CSI mount, the streamer's and
    the copier's environment, the copy tool."""
    account_name, container_name = args["account_name"], args["container_name"]
    subpath = args["model_subpath"].strip("/")
    copy_tool = CopyTool(
        image=args.get("copy_image") or DEFAULT_COPY_IMAGE,
        command=["/bin/sh", "-c", COPY_SCRIPT],
        env={"AZURE_STORAGE_ACCOUNT_NAME": account_name},
    )
    return WeightStore(
        uri=uri,
        model_subpath=subpath,
        reader=ServiceAccountSpec(name=reader_sa, annotations={CLIENT_ID_ANNOTATION: reader.client_id},
                                  pod_labels={USE_LABEL: "true"}),
        writer=ServiceAccountSpec(name=writer_sa, annotations={CLIENT_ID_ANNOTATION: writer.client_id},
                                  pod_labels={USE_LABEL: "true"}),
        fuse=CsiVolume(
            driver=BLOB_CSI_DRIVER,
            # blobfuse2 with the reader's workload identity token: the account has no shared keys to fetch
            # (kubernetes-sigs/blob-csi-driver docs/workload-identity-static-pv-mount.md).
            volume_attributes={
                "protocol": "fuse2",
                "resourcegroup": rg,
                "storageaccount": account_name,
                "containerName": container_name,
                "clientID": reader.client_id,
                "mountWithWorkloadIdentityToken": "true",
            },
            mount_options=["-o allow_other", "--block-cache", "--use-attr-cache=true"],
            inline=False,
            volume_handle=f"{account_name}-{container_name}-weights",
            capacity="2Ti",
        ),
        streamer_env={"AZURE_STORAGE_ACCOUNT_NAME": account_name},
        # adlfs reads the account from the environment and signs in with DefaultAzureCredential, which
        # picks up the workload identity the webhook injects (AZURE_FEDERATED_TOKEN_FILE).
        copy_env={"AZURE_STORAGE_ACCOUNT_NAME": account_name},
        download=copy_tool,
        grant_propagation_seconds=GRANT_PROPAGATION[Cloud.AZURE].seconds,
    )
