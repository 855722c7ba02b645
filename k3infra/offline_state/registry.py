"""The registry the provider modules fill: computed state per resource type and provider, results per function
token, and the fake account ids every module derives from."""

from typing import Any, Callable

ResourceState = Callable[[str, dict[str, Any]], dict[str, Any]]
FunctionResult = Callable[[dict[str, Any]], dict[str, Any]]

_BY_TYPE: dict[str, ResourceState] = {}
_BY_PREFIX: dict[str, ResourceState] = {}
_FUNCTIONS: dict[str, FunctionResult] = {}

FAKE_ACCOUNT = "123456789012"
"""AWS account id in offline plans."""
FAKE_PROJECT_NUMBER = "123456789012"
"""Google Cloud project number in offline plans."""
FAKE_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
"""Azure subscription id in offline plans."""


def resource(*types: str) -> Callable[[ResourceState], ResourceState]:
    """Register the computed state of one or more resource types."""

    def deco(fn: ResourceState) -> ResourceState:
        for t in types:
            _BY_TYPE[t] = fn
        return fn

    return deco


def provider_default(prefix: str) -> Callable[[ResourceState], ResourceState]:
    """Register the computed state every resource of a provider gets (``aws:``, ``gcp:``...)."""

    def deco(fn: ResourceState) -> ResourceState:
        _BY_PREFIX[prefix] = fn
        return fn

    return deco


def function(*tokens: str) -> Callable[[FunctionResult], FunctionResult]:
    """Register the result of one or more provider functions."""

    def deco(fn: FunctionResult) -> FunctionResult:
        for t in tokens:
            _FUNCTIONS[t] = fn
        return fn

    return deco


def new_resource(typ: str, name: str, inputs: dict[str, Any], resource_id: str | None) -> tuple[str, dict[str, Any]]:
    """The (id, state) a mock returns: the inputs, then provider defaults, then the type's own outputs."""
    state = dict(inputs)
    for prefix, fn in _BY_PREFIX.items():
        if typ.startswith(prefix):
            state.update(fn(name, inputs))
    if typ in _BY_TYPE:
        state.update(_BY_TYPE[typ](name, inputs))
    rid = resource_id or str(state.get("id") or f"{name}-id")
    state.pop("id", None)
    return rid, state


def call(token: str, args: dict[str, Any]) -> dict[str, Any]:
    """The result of a provider function; unknown functions echo their arguments."""
    fn = _FUNCTIONS.get(token)
    return fn(args) if fn else dict(args)

