"""The endpoint section: exposure, who may reach a public endpoint, the inference gateway."""

from typing import Any

from ..catalog import KUBERNETES_PLATFORMS, Exposure, Platform
from .model import EndpointConfig
from .naming import cidr_problem
from .problems import Problems
from .schema import K, MISSING, is_given


def read_endpoint(v: dict[str, Any], platform: Platform | None, p: Problems,
                  warnings: list[str]) -> EndpointConfig | None:
    """The ``endpoint`` section: internal or public (a public one names who may reach it and needs an API key), and
    the gateway on Kubernetes platforms only."""
    e = v["endpoint"]
    if not isinstance(e, dict) or not is_given(e.get("exposure")):
        return None
    key = K + "endpoint."
    given_cidrs = e.get("allowedCidrs")
    cidrs: list[str] = given_cidrs if isinstance(given_cidrs, list) else []
    for i, cidr in enumerate(cidrs):
        why = cidr_problem(cidr)
        if why:
            p.add(f"{key}allowedCidrs[{i}]", f"is not a network address: {why}", cidr,
                  "an IPv4 network such as 81.2.69.0/24")
    if e["exposure"] == Exposure.PUBLIC:
        if not cidrs and given_cidrs is not MISSING:
            p.add(key + "allowedCidrs", "is required when exposure is public: name who may reach the endpoint", None,
                  "a non-empty list of IPv4 CIDRs")
        if v["apiKey"] is None:
            p.add(K + "apiKey", "is required when exposure is public: the endpoint checks an API key", None,
                  "a secret set with `pulumi config set --secret apiKey`")
        if "0.0.0.0/0" in cidrs:
            warnings.append("endpoint.allowedCidrs contains 0.0.0.0/0: the endpoint is open to the internet, "
                            "guarded only by the API key")
    elif cidrs:
        warnings.append("endpoint.allowedCidrs is ignored: the endpoint is internal")
    if e.get("gateway") and platform is not None and platform not in KUBERNETES_PLATFORMS:
        p.add(key + "gateway", f"the InferenceGateway runs on Kubernetes platforms; {platform} routes itself", True,
              "false")
    if p.keys() & {key + f for f in e} or any(k.startswith(key + "allowedCidrs") for k in p.keys()):
        return None
    return EndpointConfig(exposure=e["exposure"], allowed_cidrs=tuple(cidrs), gateway=bool(e.get("gateway")))
