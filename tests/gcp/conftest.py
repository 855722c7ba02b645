"""Fixtures for the Google Cloud tests."""

import pytest

from k3infra.offline_state import gcp as offline_gcp


@pytest.fixture
def reservations(monkeypatch: pytest.MonkeyPatch) -> dict[str, offline_gcp.OfflineReservation]:
    """The offline reservation table, restored after the test (patch entries to model other reservations)."""
    table = dict(offline_gcp.RESERVATIONS)
    monkeypatch.setattr(offline_gcp, "RESERVATIONS", table)
    return table
