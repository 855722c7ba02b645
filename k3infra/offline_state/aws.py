"""Computed outputs of AWS resources and functions."""

from typing import Any

from . import FAKE_ACCOUNT, function, provider_default


@provider_default("aws:")
def aws_resource(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Every AWS resource has an ARN."""
    service = "unknown"
    return {"arn": f"arn:aws:{service}:offline-region:{FAKE_ACCOUNT}:{inputs.get('name') or name}"}


@function("aws:index/getCallerIdentity:getCallerIdentity")
def caller_identity(args: dict[str, Any]) -> dict[str, Any]:
    """The account the program runs as."""
    return {"accountId": FAKE_ACCOUNT, "arn": f"arn:aws:iam::{FAKE_ACCOUNT}:user/offline", "userId": "OFFLINE", "id": FAKE_ACCOUNT}
