"""Alibaba Cloud configuration rules beyond the cloud-neutral ones."""

from ..problems import Problems
from . import CheckContext


def check(ctx: CheckContext, p: Problems, warnings: list[str]) -> None:
    """Report Alibaba Cloud-specific problems in ``ctx``."""
