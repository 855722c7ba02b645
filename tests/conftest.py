"""Test-session settings shared by every test module."""

import pytest

FIRST = ("tests/test_typecheck.py",)
"""Long tests scheduled first, so that with several workers they overlap the rest instead of trailing it."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: 0 if item.nodeid.startswith(FIRST) else 1)
