"""Raw stack configurations and helpers shared by the configuration tests of every cloud."""

import copy

from k3infra.config import ConfigError, parse_config
from k3infra.config.problems import Problem

GCP = {
    "gcp:project": "my-project",
    "gcp:region": "us-central1",
    "k3infra:cloud": "gcp",
    "k3infra:zone": "us-central1-b",
    "k3infra:accelerator": "a4x-maxgpu-4g-metal",
    "k3infra:capacity": {"type": "reservation", "reservation": "r", "block": "b", "subBlock": "s"},
    "k3infra:image": "registry.example.com/vllm:k3-arm64",
    "k3infra:imagePlatforms": ["arm64"],
    "k3infra:weights": {"bucket": "kimi-k3-weights", "revision": "0123456789abcdef0123456789abcdef01234567"},
    "k3infra:hfToken": "hf_x",
    "k3infra:gcp": {"authorizedNetworks": ["81.2.69.0/24"]},
}
AWS = {
    "aws:region": "us-west-2",
    "k3infra:cloud": "aws",
    "k3infra:zone": "us-west-2a",
    "k3infra:accelerator": "p6-b300.48xlarge",
    "k3infra:capacity": {"type": "capacity-block", "reservationId": "cr-0123456789abcdef0"},
    "k3infra:weights": {"bucket": "kimi-k3-weights", "sync": False},
    "k3infra:aws": {"publicAccessCidrs": ["81.2.69.0/24"]},
}
HYPERPOD = {
    **AWS,
    "k3infra:platform": "hyperpod",
    "k3infra:accelerator": "ml.p6-b300.48xlarge",
    "k3infra:capacity": {"type": "training-plan",
                         "trainingPlanArn": "arn:aws:sagemaker:us-west-2:123456789012:training-plan/k3"},
}
AZURE = {
    "azure-native:location": "eastus2",
    "k3infra:cloud": "azure",
    "k3infra:zone": "1",
    "k3infra:accelerator": "Standard_ND128isr_GB300_v6",
    "k3infra:capacity": {"type": "capacity-reservation-group", "create": True},
    "k3infra:image": "registry.example.com/vllm:k3-arm64",
    "k3infra:imagePlatforms": ["arm64"],
    "k3infra:weights": {"bucket": "kimi-k3-weights", "account": "k3weights", "sync": False},
    "k3infra:azure": {"authorizedIpRanges": ["81.2.69.0/24"]},
}
ALI = {
    "alicloud:region": "cn-hangzhou",
    "k3infra:cloud": "alicloud",
    "k3infra:zone": "cn-hangzhou-h",
    "k3infra:accelerator": "ecs.ebmgn8v.48xlarge",
    "k3infra:capacity": {"type": "private-pool", "privatePoolId": "crp-abc123"},
    "k3infra:weights": {"bucket": "kimi-k3-weights", "sync": False},
}


def with_(base, **changes):
    """A copy of ``base`` with ``k3infra:`` keys changed (None deletes) and nested ``a__b`` keys set."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        full = key if ":" in key else f"k3infra:{key}"
        if "__" in full:
            head, field = full.split("__")
            if value is None:
                out[head].pop(field, None)
            else:
                out[head][field] = value
        elif value is None:
            out.pop(full, None)
        else:
            out[full] = value
    return out


def problems(raw, *, real_run: bool = True) -> list[Problem]:
    """What parse_config refuses in ``raw``; by default as for `pulumi up` (values a stack file may leave to the
    deployer included: Problems.before_up)."""
    try:
        parse_config(raw, stack="test", real_run=real_run)
    except ConfigError as e:
        return list(e.problems)
    return []


def only(raw) -> Problem:
    found = problems(raw)
    assert len(found) == 1, "\n".join(map(str, found))
    return found[0]
