"""AWS configuration rules beyond the cloud-neutral ones."""

from ..problems import Problems
from . import CheckContext


def check(ctx: CheckContext, p: Problems, warnings: list[str]) -> None:
    """Report AWS-specific problems in ``ctx``."""
