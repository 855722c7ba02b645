"""The quota gate: the usage adapter (with a fake Compute client), credential detection, and the gate itself."""

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from k3infra.azure import quota
from k3infra.azure.quota import ComputeUsageReader, FamilyUsage, QuotaError
from tests.support import plan

FAMILY = "standardNDISRGB300V6Family"
SP_ENV = {"AZURE_CLIENT_ID": "c", "AZURE_TENANT_ID": "t", "AZURE_CLIENT_SECRET": "s"}


def _item(family: str, current: int, limit: int) -> SimpleNamespace:
    """An item shaped like azure.mgmt.compute.models.Usage."""
    return SimpleNamespace(name=SimpleNamespace(value=family, localized_value=family), current_value=current,
                           limit=limit, unit="Count")


class FakeComputeClient:
    """Stands in for ComputeManagementClient: records the location asked for."""

    def __init__(self, items: list[SimpleNamespace]) -> None:
        self.asked: list[str] = []
        self.usage = SimpleNamespace(list=self._list)
        self._items = items

    def _list(self, location: str) -> list[SimpleNamespace]:
        self.asked.append(location)
        return self._items


def _cfg(*sets: str):
    return plan("azure-gb300", *sets).config


def test_adapter_reads_usage_items() -> None:
    client = FakeComputeClient([_item("standardDSv5Family", 8, 100), _item(FAMILY, 0, 256)])
    got = list(ComputeUsageReader(client).regional_usage("eastus2"))
    assert client.asked == ["eastus2"]
    assert got == [FamilyUsage("standardDSv5Family", 8, 100), FamilyUsage(FAMILY, 0, 256)]


def _factory(items: list[SimpleNamespace], seen: list[str]):
    def make(subscription: str) -> ComputeUsageReader:
        seen.append(subscription)
        return ComputeUsageReader(FakeComputeClient(items))
    return make


def _without_stated_quota():
    """The azure-gb300 stack with azure.quotaVcpus removed (the lookup path)."""
    cfg = plan("azure-gb300").config
    assert cfg.azure is not None
    return dataclasses.replace(cfg, azure=dataclasses.replace(cfg.azure, quota_vcpus=None))


def test_lookup_passes_with_enough_quota(tmp_path: Path) -> None:
    cfg = _without_stated_quota()
    seen: list[str] = []
    check = quota.gate(cfg, offline=False, env=SP_ENV, home=tmp_path, reader_factory=_factory([_item(FAMILY, 0, 256)], seen))
    assert check is not None
    assert (check.source, check.need_vcpus, check.limit_vcpus, check.in_use_vcpus) == ("lookup", 256, 256, 0)
    assert seen == ["00000000-0000-0000-0000-000000000000"]


def test_lookup_below_need_fails_with_family_need_and_limit(tmp_path: Path) -> None:
    cfg = _without_stated_quota()
    with pytest.raises(QuotaError) as e:
        quota.gate(cfg, offline=False, env=SP_ENV, home=tmp_path, reader_factory=_factory([_item(FAMILY, 0, 128)], []))
    msg = str(e.value)
    assert FAMILY in msg and "eastus2" in msg
    assert "2 x Standard_ND128isr_GB300_v6 x 128 vCPUs = 256 vCPUs" in msg
    assert "limit 128 vCPUs" in msg


def test_family_name_matches_case_insensitively(tmp_path: Path) -> None:
    cfg = _without_stated_quota()
    with pytest.raises(QuotaError):
        quota.gate(cfg, offline=False, env=SP_ENV, home=tmp_path,
                   reader_factory=_factory([_item(FAMILY.upper(), 0, 0)], []))


def test_existing_reservation_counts_against_the_limit_only(tmp_path: Path) -> None:
    """The group's reservation already holds its vCPUs in the usage: 256 in use of 256 is fine for the pool."""
    cfg = _without_stated_quota()
    check = quota.gate(cfg, offline=False, env=SP_ENV, home=tmp_path,
                       reader_factory=_factory([_item(FAMILY, 256, 256)], []))
    assert check is not None and check.source == "lookup"


def test_created_reservation_needs_free_quota(tmp_path: Path) -> None:
    cfg = _without_stated_quota()
    cfg = dataclasses.replace(cfg, capacity=dataclasses.replace(cfg.capacity, group_id=None, create=True))
    with pytest.raises(QuotaError) as e:
        quota.gate(cfg, offline=False, env=SP_ENV, home=tmp_path, reader_factory=_factory([_item(FAMILY, 128, 256)], []))
    assert "128 in use (128 free)" in str(e.value)


def test_skipped_with_a_warning_without_credentials(tmp_path: Path) -> None:
    cfg = _without_stated_quota()

    def never(subscription: str) -> ComputeUsageReader:
        raise AssertionError("no lookup without credentials")

    check = quota.gate(cfg, offline=False, env={}, home=tmp_path, reader_factory=never)
    assert check is not None and check.source == "skipped" and check.limit_vcpus is None
    (warning,) = check.warnings
    assert "no Azure credentials" in warning and FAMILY in warning and "k3infra:azure.quotaVcpus" in warning


def test_never_looks_up_offline(tmp_path: Path) -> None:
    cfg = _without_stated_quota()

    def never(subscription: str) -> ComputeUsageReader:
        raise AssertionError("no lookup offline")

    check = quota.gate(cfg, offline=True, env=SP_ENV, home=tmp_path, reader_factory=never)
    assert check is not None and check.source == "skipped" and "offline" in check.warnings[0]


def test_a_failing_lookup_degrades_to_a_warning(tmp_path: Path) -> None:
    cfg = _without_stated_quota()

    def broken(subscription: str) -> ComputeUsageReader:
        raise RuntimeError("AADSTS700016: application not found")

    check = quota.gate(cfg, offline=False, env=SP_ENV, home=tmp_path, reader_factory=broken)
    assert check is not None and check.source == "skipped" and "AADSTS700016" in check.warnings[0]


def test_unknown_family_is_reported_not_guessed(tmp_path: Path) -> None:
    cfg = _without_stated_quota()
    check = quota.gate(cfg, offline=False, env=SP_ENV, home=tmp_path,
                       reader_factory=_factory([_item("standardDSv5Family", 0, 100)], []))
    assert check is not None and check.source == "skipped" and "UNCONFIRMED" in check.warnings[0]


def test_stated_quota_makes_no_lookup(tmp_path: Path) -> None:
    cfg = _cfg()

    def never(subscription: str) -> ComputeUsageReader:
        raise AssertionError("azure.quotaVcpus is stated: no lookup")

    check = quota.gate(cfg, offline=False, env=SP_ENV, home=tmp_path, reader_factory=never)
    assert check is not None and (check.source, check.limit_vcpus, check.need_vcpus) == ("config", 256, 256)


@pytest.mark.parametrize("env, expected", [
    ({}, None),
    ({"AZURE_CLIENT_ID": "c", "AZURE_TENANT_ID": "t"}, None),
    (SP_ENV, "AZURE_CLIENT_ID with AZURE_CLIENT_SECRET"),
    ({"AZURE_CLIENT_ID": "c", "AZURE_TENANT_ID": "t", "AZURE_FEDERATED_TOKEN_FILE": "/var/run/token"},
     "AZURE_CLIENT_ID with AZURE_FEDERATED_TOKEN_FILE"),
    ({"ARM_CLIENT_ID": "c", "ARM_TENANT_ID": "t", "ARM_OIDC_TOKEN": "x"}, "ARM_CLIENT_ID with ARM_OIDC_TOKEN"),
    ({"ARM_USE_MSI": "true"}, "a managed identity"),
])
def test_credentials_from_the_environment(env: dict[str, str], expected: str | None, tmp_path: Path) -> None:
    assert quota.credentials_source(env, home=tmp_path) == expected


def test_credentials_from_an_azure_cli_login(tmp_path: Path) -> None:
    profile = tmp_path / ".azure" / "azureProfile.json"
    profile.parent.mkdir()
    profile.write_text('\ufeff{"subscriptions": []}', encoding="utf-8")
    assert quota.credentials_source({}, home=tmp_path) is None
    profile.write_text('\ufeff{"subscriptions": [{"id": "x", "isDefault": true}]}', encoding="utf-8")
    assert quota.credentials_source({}, home=tmp_path) == f"the Azure CLI login in {profile}"


def test_compute_usage_reader_builds_the_sdk_client() -> None:
    """The real factory wires DefaultAzureCredential into ComputeManagementClient (no call is made)."""
    reader = quota.compute_usage_reader("00000000-0000-0000-0000-000000000000")
    assert isinstance(reader, ComputeUsageReader)
    client = reader._client  # noqa: SLF001 - checking the wiring
    assert type(client).__name__ == "ComputeManagementClient"
    assert type(client._config.credential).__name__ == "DefaultAzureCredential"  # noqa: SLF001
