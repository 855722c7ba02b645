"""Fixtures for the Google Cloud tests."""

import pytest

from k3infra.offline_state import gcp as offline_gcp


@pytest.fixture
def reservations(monkeypatch: pytest.MonkeyPatch) -> dict[str, offline_gcp.OfflineReservation]:
    """The offline reservation table, restored after the test (patch entries to model other reservations)."""
    table = dict(offline_gcp.RESERVATIONS)
    monkeypatch.setattr(offline_gcp, "RESERVATIONS", table)
    return table


@pytest.fixture
def engine_versions(monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, str]]:
    """The offline release-channel versions, restored after the test (patch them to model a lagging channel)."""
    table = {k: dict(v) for k, v in offline_gcp.ENGINE_VERSIONS.items()}
    monkeypatch.setattr(offline_gcp, "ENGINE_VERSIONS", table)
    return table
