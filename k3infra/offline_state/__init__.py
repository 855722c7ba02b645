"""Plausible computed outputs for the recording engine, per resource type and function token.

Each provider has a module here that registers what the real provider would compute (ids, ARNs, endpoints,
certificate data, project numbers) so downstream inputs built from them resolve to realistic values. Every
value is derived from the resource's name and inputs, so two runs produce identical plans.
"""

from . import alicloud, aws, azure, gcp, kubernetes  # noqa: F401 - each registers its provider's outputs
from .registry import FAKE_ACCOUNT, FAKE_PROJECT_NUMBER, FAKE_SUBSCRIPTION, call, new_resource
from .registry import _FUNCTIONS  # noqa: F401 - the seam tests patch one function's result through

__all__ = ["FAKE_ACCOUNT", "FAKE_PROJECT_NUMBER", "FAKE_SUBSCRIPTION", "call", "new_resource"]
