"""BlobWeightBucket: exact inventory, the storage account's switches, a private container, a reader and a writer
identity each federated to one service account, least-privilege roles, retention, and the WeightStore."""

import typing
from typing import Any

import pulumi
import pytest

from k3infra import offline
from k3infra.azure import BlobWeightBucket, BlobWeightBucketArgs
from tests.support import inventory, record

SUB = "00000000-0000-0000-0000-000000000000"
BUCKET = "k3infra:index:BlobWeightBucket"
ISSUER = "https://eastus2.oic.prod-aks.azure.com/tenant/issuer/"
CONTAINER_ID = (f"/subscriptions/{SUB}/resourceGroups/rg-w/providers/Microsoft.Storage/storageAccounts/k3weights/"
                "blobServices/default/containers/kimi-k3-weights")
ROLE = f"/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/"
BASE: dict[str, Any] = {
    "resource_group_name": "rg-w", "location": "eastus2", "account_name": "k3weights",
    "container_name": "kimi-k3-weights", "model_subpath": "models/moonshotai/Kimi-K3", "oidc_issuer_url": ISSUER,
    "namespace": "kimi-k3",
}


def run(**extra: Any) -> tuple[offline.Recording, BlobWeightBucket]:
    made: list[BlobWeightBucket] = []

    def program() -> None:
        made.append(BlobWeightBucket("w", typing.cast(BlobWeightBucketArgs, {**BASE, **extra})))
        pulumi.export("store", made[0].store)
    rec = record(program)
    return rec, made[0]


@pytest.fixture(scope="module")
def bucket() -> tuple[offline.Recording, BlobWeightBucket]:
    return run()


def test_inventory(bucket: tuple[offline.Recording, BlobWeightBucket]) -> None:
    rec, _ = bucket
    assert inventory(rec) == [
        (BUCKET, "w", None),
        ("azure-native:authorization:RoleAssignment", "w-reader-access", BUCKET),
        ("azure-native:authorization:RoleAssignment", "w-writer-access", BUCKET),
        ("azure-native:managedidentity:FederatedIdentityCredential", "w-reader-federation", BUCKET),
        ("azure-native:managedidentity:FederatedIdentityCredential", "w-writer-federation", BUCKET),
        ("azure-native:managedidentity:UserAssignedIdentity", "w-reader", BUCKET),
        ("azure-native:managedidentity:UserAssignedIdentity", "w-writer", BUCKET),
        ("azure-native:resources:ResourceGroup", "w-rg", BUCKET),
        ("azure-native:storage:BlobContainer", "w-container", BUCKET),
        ("azure-native:storage:StorageAccount", "w-account", BUCKET),
    ]


def test_storage_account_switches(bucket: tuple[offline.Recording, BlobWeightBucket]) -> None:
    rec, _ = bucket
    assert rec.one("azure-native:storage:StorageAccount").inputs == {
        "resourceGroupName": "rg-w",
        "accountName": "k3weights",
        "location": "eastus2",
        "kind": "BlockBlobStorage",
        "sku": {"name": "Premium_LRS"},
        "allowBlobPublicAccess": False,
        "allowSharedKeyAccess": False,
        "publicNetworkAccess": "Enabled",  # no subnet to put a private endpoint in (the plan says why)
        "defaultToOAuthAuthentication": True,
        "allowCrossTenantReplication": False,
        "minimumTlsVersion": "TLS1_2",
        "enableHttpsTrafficOnly": True,
        "tags": {},
    }


def test_standard_account_when_not_premium() -> None:
    i = run(premium=False)[0].one("azure-native:storage:StorageAccount").inputs
    assert (i["kind"], i["sku"]) == ("StorageV2", {"name": "Standard_LRS"})
    assert i["allowSharedKeyAccess"] is False and i["allowBlobPublicAccess"] is False


def test_container_is_private(bucket: tuple[offline.Recording, BlobWeightBucket]) -> None:
    rec, _ = bucket
    assert rec.one("azure-native:storage:BlobContainer").inputs == {
        "resourceGroupName": "rg-w", "accountName": "k3weights", "containerName": "kimi-k3-weights",
        "publicAccess": "None"}


def test_identities_are_user_assigned_and_federated_to_one_service_account_each(
        bucket: tuple[offline.Recording, BlobWeightBucket]) -> None:
    rec, _ = bucket
    names = {r.name: r.inputs["resourceName"] for r in rec.by_type("azure-native:managedidentity:UserAssignedIdentity")}
    assert names == {"w-reader": "k3weights-reader", "w-writer": "k3weights-writer"}
    feds = {r.name: r.inputs for r in rec.by_type("azure-native:managedidentity:FederatedIdentityCredential")}
    assert feds["w-reader-federation"] == {
        "resourceGroupName": "rg-w", "resourceName": "k3weights-reader",
        "federatedIdentityCredentialResourceName": "kimi-k3-k3-server", "issuer": ISSUER,
        "subject": "system:serviceaccount:kimi-k3:k3-server", "audiences": ["api://AzureADTokenExchange"]}
    assert feds["w-writer-federation"]["subject"] == "system:serviceaccount:kimi-k3:k3-weight-sync"
    assert feds["w-writer-federation"]["resourceName"] == "k3weights-writer"
    assert feds["w-writer-federation"]["issuer"] == ISSUER


def test_server_reads_and_only_the_sync_job_writes(bucket: tuple[offline.Recording, BlobWeightBucket]) -> None:
    rec, _ = bucket
    uami = {r.name: r for r in rec.by_type("azure-native:managedidentity:UserAssignedIdentity")}
    grants = {r.name: r.inputs for r in rec.by_type("azure-native:authorization:RoleAssignment")}
    assert grants["w-reader-access"]["roleDefinitionId"] == ROLE + "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
    assert grants["w-writer-access"]["roleDefinitionId"] == ROLE + "ba92f5b4-2d11-453d-a403-e96b0029c9fe"
    for role in ("reader", "writer"):
        g = grants[f"w-{role}-access"]
        assert g["scope"] == CONTAINER_ID  # the container, not the account or the resource group
        assert g["principalType"] == "ServicePrincipal"
        assert g["principalId"] == uami[f"w-{role}"].outputs["principalId"]


def test_retained_on_destroy_by_default(bucket: tuple[offline.Recording, BlobWeightBucket]) -> None:
    rec, _ = bucket
    kept = {r.name for r in rec.resources if r.retain_on_delete}
    assert kept == {"w-rg", "w-account", "w-container"}  # the group too: deleting it would delete the account
    assert not any(r.protect for r in rec.resources)


def test_opt_out_of_retention() -> None:
    rec, _ = run(retain_on_destroy=False)
    assert not any(r.retain_on_delete for r in rec.resources)


def test_weight_store(bucket: tuple[offline.Recording, BlobWeightBucket]) -> None:
    rec, _ = bucket
    store = offline.unwrap(rec.outputs["store"])
    uami = {r.name: r.outputs["clientId"] for r in rec.by_type("azure-native:managedidentity:UserAssignedIdentity")}
    assert store["uri"] == "az://kimi-k3-weights/models/moonshotai/Kimi-K3"
    assert store["model_subpath"] == "models/moonshotai/Kimi-K3"
    assert store["streamer_env"] == {"AZURE_STORAGE_ACCOUNT_NAME": "k3weights"}
    assert store["reader"] == {"name": "k3-server", "annotations": {"azure.workload.identity/client-id": uami["w-reader"]},
                               "pod_labels": {"azure.workload.identity/use": "true"}}
    assert store["writer"] == {"name": "k3-weight-sync",
                               "annotations": {"azure.workload.identity/client-id": uami["w-writer"]},
                               "pod_labels": {"azure.workload.identity/use": "true"}}
    assert store["fuse"] == {
        "driver": "blob.csi.azure.com",
        "volume_attributes": {"protocol": "fuse2", "resourcegroup": "rg-w", "storageaccount": "k3weights",
                              "containerName": "kimi-k3-weights", "clientID": uami["w-reader"],
                              "mountWithWorkloadIdentityToken": "true"},
        "mount_options": ["-o allow_other", "--block-cache", "--use-attr-cache=true"],
        "inline": False,
        "volume_handle": "k3weights-kimi-k3-weights-weights",
        "capacity": "2Ti",
    }


def test_copy_tools_use_azcopy_with_workload_identity(bucket: tuple[offline.Recording, BlobWeightBucket]) -> None:
    _, b = bucket
    for tool in (b.store["upload"], b.store["download"]):
        assert tool["image"] == "docker.io/library/python:3.12.11-slim-bookworm"
        assert tool["command"][:2] == ["/bin/sh", "-c"]
        script = tool["command"][2]
        assert "AZCOPY_AUTO_LOGIN_TYPE=WORKLOAD" in script
        assert 'azcopy sync "$(blob "$SOURCE")" "$(blob "$DEST")" --recursive=true' in script
        assert "https://${AZURE_STORAGE_ACCOUNT_NAME}.blob.core.windows.net/${1#az://}" in script
        assert '"https://aka.ms/downloadazcopy-v10-linux" + ("-arm64" if arm else "")' in script  # GPU nodes: arm64
        assert tool.get("env") == {"AZURE_STORAGE_ACCOUNT_NAME": "k3weights"}


def test_copy_script_maps_az_uris_to_blob_urls(tmp_path: Any) -> None:
    """Run the script's URI mapping in a real shell, with azcopy replaced by echo."""
    import subprocess

    from k3infra.azure.storage import COPY_SCRIPT

    body = COPY_SCRIPT.split("blob() {", 1)[1]
    script = "blob() {" + body.replace("azcopy sync", "echo")
    out = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, check=True, env={
        "SOURCE": "/scratch/model", "DEST": "az://kimi-k3-weights/models/moonshotai/Kimi-K3",
        "AZURE_STORAGE_ACCOUNT_NAME": "k3weights"}).stdout.strip()
    assert out == ("/scratch/model https://k3weights.blob.core.windows.net/kimi-k3-weights/models/moonshotai/Kimi-K3 "
                   "--recursive=true")


@pytest.mark.parametrize("extra, path", [
    ({"account_name": "K3-Weights"}, "account_name"),
    ({"container_name": "Kimi_K3"}, "container_name"),
    ({"writer_service_account": "k3-server"}, "writer_service_account"),
    ({"public": True}, "public"),
])
def test_bad_arguments_fail_early(extra: dict[str, Any], path: str) -> None:
    with pytest.raises(pulumi.InputPropertyError) as e:
        run(**extra)
    assert e.value.property_path == path


@pytest.mark.parametrize("machine, suffix", [("aarch64", "-arm64"), ("x86_64", "")])
def test_copy_script_installs_azcopy_for_the_node_cpu(machine: str, suffix: str, tmp_path: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the script's Python step against a fake download: it picks the CPU's tarball and installs azcopy."""
    import io
    import platform
    import tarfile
    import urllib.request

    from k3infra.azure.storage import COPY_SCRIPT

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as archive:
        for name, data in (("azcopy_linux_x/ThirdPartyNotice.txt", b"notice"), ("azcopy_linux_x/azcopy", b"#!bin")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    asked: list[str] = []

    def urlopen(url: str, timeout: int) -> io.BytesIO:
        asked.append(url)
        return io.BytesIO(buf.getvalue())

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    monkeypatch.setattr(platform, "machine", lambda: machine)
    code = COPY_SCRIPT.split("<<'PY'\n", 1)[1].split("\nPY\n", 1)[0].replace("/tmp/azcopy", str(tmp_path))
    exec(compile(code, "copy-script", "exec"), {})  # noqa: S102 - the script's own code, under test
    assert asked == ["https://aka.ms/downloadazcopy-v10-linux" + suffix]
    assert (tmp_path / "azcopy").read_bytes() == b"#!bin" and (tmp_path / "azcopy").stat().st_mode & 0o111
