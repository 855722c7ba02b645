"""Read the configuration the Pulumi engine hands the program."""

from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from .model import StackConfig
from .validate import parse_config


def raw_pulumi_config() -> dict[str, Any]:
    """Every configuration key the engine set, as ``namespace:key`` to its string value."""
    keys = set(runtime_config.CONFIG.get()) | set(runtime_config.get_config_env())
    return {k: runtime_config.get_config(k) for k in sorted(keys)}


def from_pulumi(*, real_run: bool) -> StackConfig:
    """Validate the running stack's configuration (raises ConfigError before anything is registered); ``real_run``
    as in ``parse_config``."""
    return parse_config(
        raw_pulumi_config(),
        stack=pulumi.get_stack(),
        project=pulumi.get_project(),
        source=f"stack {pulumi.get_stack()}",
        from_strings=True,
        real_run=real_run,
    )
