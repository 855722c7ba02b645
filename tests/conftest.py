"""Test-session settings shared by every test module."""

import os

import pytest

from k3infra.clock import PLAN_TIME_ENV

PLAN_TIME = "2026-12-01T12:00:00Z"
"""The plans' date in every test (capacity windows, Kubernetes support calendars), so golden plans do not move
with the calendar. Subprocesses inherit it."""
os.environ[PLAN_TIME_ENV] = PLAN_TIME

FIRST = ("tests/test_typecheck.py",)
"""Long tests scheduled first, so that with several workers they overlap the rest instead of trailing it."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: 0 if item.nodeid.startswith(FIRST) else 1)
