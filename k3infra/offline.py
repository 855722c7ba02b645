"""The recording engine: the whole program under Pulumi mocks, with a monitor that records every registration.

``k3infra plan``, ``k3infra render`` and the tests all run programs through :func:`run`. Nothing here talks
to a cloud, needs credentials or the Pulumi CLI. Each registration is kept with its type, name, parent,
dependencies, provider, protect flag, options and inputs (secrets marked), and the mocks answer with
plausible computed outputs per resource type (``k3infra.offline_state``) so that inputs built from other
resources' outputs are not silently dropped.
"""

import asyncio
import contextvars
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import pulumi

from google.protobuf import json_format
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from . import offline_state

SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
ASSET_SIG = "c44067f5952c0a294b673a41bacd8c17"
ARCHIVE_SIG = "0def7320c3a5731c473e5ecbe6d01bc7"
OUTPUT_SIG = "d0e6a833031e9bbcd3f4e8bde6ca49a4"
SIG_KEY = "4dabf18193072939515e22adb298388d"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
STACK_TYPE = "pulumi:pulumi:Stack"

SECRET_MASK = "[secret]"
UNKNOWN_MASK = "[unknown]"


@dataclass(frozen=True)
class Secret:
    """A value the engine would keep secret."""

    value: Any


@dataclass(frozen=True)
class ResourceRef:
    """A reference to another resource inside an input."""

    urn: str


def _decode(v: Any) -> Any:
    """Decode the engine's wire form (a protobuf Struct as JSON) into plain values, keeping secrets marked."""
    if isinstance(v, dict):
        sig = v.get(SIG_KEY)
        if sig == SECRET_SIG:
            return Secret(_decode(v.get("value")))
        if sig == RESOURCE_SIG:
            return ResourceRef(v.get("urn", ""))
        if sig == OUTPUT_SIG:
            inner = _decode(v.get("value", UNKNOWN))
            return Secret(inner) if v.get("secret") else inner
        if sig in (ASSET_SIG, ARCHIVE_SIG):
            return {k: _decode(x) for k, x in v.items() if k != SIG_KEY}
        return {k: _decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x) for x in v]
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def plain(v: Any, mask_secrets: bool = True) -> Any:
    """A JSON-ready copy: secrets become ``[secret]`` (or their value), references their URN."""
    if isinstance(v, Secret):
        return SECRET_MASK if mask_secrets else plain(v.value, mask_secrets)
    if isinstance(v, ResourceRef):
        return {"resourceRef": v.urn}
    if isinstance(v, dict):
        return {k: plain(x, mask_secrets) for k, x in sorted(v.items())}
    if isinstance(v, (list, tuple)):
        return [plain(x, mask_secrets) for x in v]
    if v == UNKNOWN:
        return UNKNOWN_MASK
    return v


def unwrap(v: Any) -> Any:
    """The value with every Secret wrapper removed (for assertions on secret values)."""
    return plain(v, mask_secrets=False)


@dataclass
class Registration:
    """One RegisterResource call as the engine saw it."""

    urn: str
    type: str
    name: str
    parent: str | None
    """URN of the parent; None for a top-level resource (parented to the stack)."""
    dependencies: tuple[str, ...]
    provider: str | None
    """URN of the explicit provider, if any."""
    protect: bool
    custom: bool
    retain_on_delete: bool
    ignore_changes: tuple[str, ...]
    aliases: tuple[str, ...]
    custom_timeouts: dict[str, str]
    delete_before_replace: bool
    inputs: dict[str, Any]
    """Inputs as registered (camelCase engine names), Secret-wrapped where secret."""
    outputs: dict[str, Any] = field(default_factory=dict)
    replace_on_changes: tuple[str, ...] = ()
    """Input paths whose change replaces the resource instead of updating it."""

    @property
    def parent_type(self) -> str | None:
        """Type token of the parent, read from its URN."""
        if self.parent is None:
            return None
        return self.parent.split("::")[2].split("$")[-1]

    def to_json(self) -> dict[str, Any]:
        """The plan's view of this resource (DESIGN.md: plan --format json)."""
        out: dict[str, Any] = {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "dependsOn": sorted(set(self.dependencies)),
            "provider": self.provider,
            "protect": self.protect,
            "custom": self.custom,
            "inputs": plain(self.inputs),
        }
        options: dict[str, Any] = {}
        if self.retain_on_delete:
            options["retainOnDelete"] = True
        if self.ignore_changes:
            options["ignoreChanges"] = sorted(self.ignore_changes)
        if self.aliases:
            options["aliases"] = sorted(self.aliases)
        if self.custom_timeouts:
            options["customTimeouts"] = dict(sorted(self.custom_timeouts.items()))
        if self.delete_before_replace:
            options["deleteBeforeReplace"] = True
        if self.replace_on_changes:
            options["replaceOnChanges"] = sorted(self.replace_on_changes)
        if options:
            out["options"] = options
        return out


@dataclass(frozen=True)
class Invocation:
    """One provider function call (a data source lookup)."""

    token: str
    args: dict[str, Any]


@dataclass
class Recording:
    """Everything one program run registered."""

    project: str
    stack: str
    resources: list[Registration]
    outputs: dict[str, Any]
    invocations: list[Invocation]
    log_warnings: list[str]

    def ordered(self) -> list[Registration]:
        """Resources in a stable order: a parent before its children, siblings by (type, name)."""
        children: dict[str | None, list[Registration]] = {}
        known = {r.urn for r in self.resources}
        for r in self.resources:
            children.setdefault(r.parent if r.parent in known else None, []).append(r)
        out: list[Registration] = []

        def walk(parent: str | None) -> None:
            for r in sorted(children.get(parent, []), key=lambda r: (r.type, r.name)):
                out.append(r)
                walk(r.urn)

        walk(None)
        return out

    def by_type(self, type_: str) -> list[Registration]:
        """Every registration of one type token, in stable order."""
        return [r for r in self.ordered() if r.type == type_]

    def one(self, type_: str, name: str | None = None) -> Registration:
        """The single registration of ``type_`` (and ``name``); raises when there is not exactly one."""
        found = [r for r in self.by_type(type_) if name is None or r.name == name]
        if len(found) != 1:
            raise LookupError(f"expected one {type_} {name or ''}, found {[r.name for r in found]}")
        return found[0]

    def get(self, urn: str) -> Registration:
        """The registration with this URN."""
        for r in self.resources:
            if r.urn == urn:
                return r
        raise LookupError(urn)


class RecordingMocks(pulumi_mocks.Mocks):
    """Mocks that echo inputs and add plausible computed outputs per resource type."""

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str, dict]:
        return offline_state.new_resource(args.typ, args.name, dict(args.inputs), args.resource_id)

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict, list | None]:
        return offline_state.call(args.token, dict(args.args)), []


def _version_alias(type_: str, alias: Any) -> bool:
    """An alias a provider SDK adds for an older API version of the same resource (pulumi-kubernetes:
    ``kubernetes:extensions/v1beta1:Deployment``; azure-native: ``azure-native:storage/v20230501:StorageAccount``,
    about 25 per resource): the same package and resource name in another module. Plans leave them out."""
    spec = getattr(alias, "spec", None)
    if alias.urn or spec is None or not spec.type or spec.name or spec.parentUrn or spec.noParent:
        return False
    old, new = spec.type.split(":"), type_.split(":")
    return len(old) == len(new) == 3 and old[0] == new[0] and old[2] == new[2]


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A mock monitor that records every registration and invocation."""

    def __init__(self, mocks: pulumi_mocks.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []
        self.invocations: list[Invocation] = []
        self._lock = threading.Lock()
        self._stack_urn = ""
        self._aliases: dict[str, tuple[str, ...]] = {}

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """A URN as the real engine generates it (pkg/resource/deploy/deployment.go ``generateURN``,
        sdk/go/common/resource/urn ``New``): a child's type is prefixed with its parent's whole qualified
        type, and a top-level resource's parent, the root stack, adds nothing. The SDK mock's
        ``make_urn`` keeps ``pulumi:pulumi:Stack$`` and only the parent's last type, so plans would not match
        ``pulumi preview --json``."""
        if parent:
            parent_type = parent.split("::")[2]
            if parent_type != STACK_TYPE:
                type_ = parent_type + "$" + type_
        return "urn:pulumi:" + "::".join([pulumi.get_stack(), pulumi.get_project(), type_, name])

    def _alias_urn(self, request: Any, alias: Any) -> str:
        """The URN an alias stands for, built the way this monitor builds URNs (an alias given as a spec names
        only what differs: the name, type, parent or no parent)."""
        if alias.urn:
            return alias.urn
        spec = alias.spec
        parent = self._stack_urn if spec.noParent else (spec.parentUrn or request.parent or self._stack_urn)
        urn = self.make_urn(parent, spec.type or request.type, spec.name or request.name)
        stack, project, qualified_type, name = urn[len("urn:pulumi:"):].split("::", 3)
        return "urn:pulumi:" + "::".join([spec.stack or stack, spec.project or project, qualified_type, name])

    def _inherited_aliases(self, request: Any) -> list[str]:
        """The aliases the Pulumi engine gives a child of an aliased parent: the child under each of the
        parent's old URNs, its name's parent-name prefix replaced by the old name (the engine's
        ``inheritedChildAlias``; the SDK leaves this to the engine when the monitor takes alias specs)."""
        parent_aliases = self._aliases.get(request.parent, ())
        parent_name = request.parent.split("::")[-1] if request.parent else ""
        out = []
        for alias in parent_aliases:
            old_parent_name = alias.split("::")[-1]
            name = request.name
            if parent_name and name.startswith(parent_name):
                name = old_parent_name + name[len(parent_name):]
            out.append(self.make_urn(alias, request.type, name))
        return out

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (gRPC name)
        response = super().RegisterResource(request)
        if request.type == STACK_TYPE:
            self._stack_urn = response.urn
            return response
        parent = request.parent or None
        if parent is not None and parent.split("::")[2] == STACK_TYPE:
            parent = None
        timeouts = {}
        ct = request.customTimeouts
        for key in ("create", "update", "delete"):
            if getattr(ct, key, ""):
                timeouts[key] = getattr(ct, key)
        reg = Registration(
            urn=response.urn,
            type=request.type,
            name=request.name,
            parent=parent,
            dependencies=tuple(request.dependencies),
            provider=request.provider.rsplit("::", 1)[0] if request.provider else None,
            protect=bool(request.protect),
            custom=bool(request.custom),
            retain_on_delete=bool(request.retainOnDelete),
            ignore_changes=tuple(request.ignoreChanges),
            aliases=tuple(dict.fromkeys([*(self._alias_urn(request, a) for a in request.aliases
                                           if not _version_alias(request.type, a)),
                                         *self._inherited_aliases(request)])),
            custom_timeouts=timeouts,
            delete_before_replace=bool(request.deleteBeforeReplace),
            inputs=_decode(json_format.MessageToDict(request.object)),
            outputs=_decode(json_format.MessageToDict(response.object)),
            replace_on_changes=tuple(request.replaceOnChanges),
        )
        with self._lock:
            self.registrations.append(reg)
            self._aliases[reg.urn] = reg.aliases
        return response

    def Invoke(self, request: Any) -> Any:  # noqa: N802 (gRPC name)
        with self._lock:
            self.invocations.append(Invocation(request.tok, _decode(json_format.MessageToDict(request.args))))
        return super().Invoke(request)


class _WarningCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def config_strings(config: Mapping[str, Any]) -> dict[str, str]:
    """Config values as the engine hands them to a program: strings, objects JSON-encoded, booleans lowercase."""
    out = {}
    for k, v in config.items():
        if isinstance(v, Secret):
            v = v.value
        if v is None:  # an unset key (e.g. `--set key=null`): the engine would not pass it at all
            continue
        if isinstance(v, str):
            out[k] = v
        elif isinstance(v, bool):
            out[k] = "true" if v else "false"
        else:
            out[k] = json.dumps(v, sort_keys=True)
    return out


def _ignore_abandoned(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Exception handler of a failed run's loop: abandoned futures are expected; anything else is reported."""
    message = str(context.get("message", ""))
    if "never retrieved" in message or "was destroyed but it is pending" in message:
        return
    loop.default_exception_handler(context)


async def _resolve(value: Any) -> Any:
    out = pulumi.Output.from_input(value)
    resolved = await out.future(with_unknowns=True)
    secret = await out.is_secret()
    return Secret(resolved) if secret else resolved


def active() -> bool:
    """True while a program runs under the recording engine (``k3infra plan``, the tests): lookups that would call
    a cloud outside Pulumi (SDK clients) are skipped there."""
    return isinstance(pulumi_settings.get_monitor(), pulumi_mocks.MockMonitor)


def run(
    program: Callable[[], None],
    *,
    project: str,
    stack: str,
    config: Mapping[str, Any] | None = None,
    secret_keys: tuple[str, ...] = (),
) -> Recording:
    """Run ``program`` under the recording engine and return what it registered.

    ``config`` maps ``namespace:key`` to values (typed values are encoded the way the engine passes them;
    ``Secret`` values and ``secret_keys`` are marked secret). Each run gets a fresh Pulumi runtime, so runs
    in one process do not see each other. Exceptions raised by the program propagate.
    """
    strings = config_strings(config or {})
    secrets = set(secret_keys) | {k for k, v in (config or {}).items() if isinstance(v, Secret)}

    def go() -> Recording:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        # The SDK gives each executor thread an event loop of its own; create them here so they can be closed
        # with the run instead of failing noisily when the interpreter exits.
        thread_loops: list[asyncio.AbstractEventLoop] = []

        def thread_loop() -> None:
            thread_loops.append(asyncio.new_event_loop())
            asyncio.set_event_loop(thread_loops[-1])

        loop.set_default_executor(ThreadPoolExecutor(initializer=thread_loop))
        collector = _WarningCollector()
        logger = logging.getLogger(f"k3infra.offline.{id(collector)}")
        logger.propagate = False
        logger.addHandler(collector)
        try:
            pulumi_settings.ROOT.set(None)
            set_all_config(strings, sorted(secrets))
            mocks = RecordingMocks()
            monitor = RecordingMonitor(mocks)
            # A run whose program failed inside an apply leaves its failed Output tasks in the SDK's shared set of
            # pending outputs (kept "to pick up at program exit"), and the next run would await them on a closed
            # loop; start clean, as pulumi.runtime.test does.
            sdk: Any = pulumi_settings.SETTINGS  # context properties the SDK's stubs do not declare
            sdk.outputs.clear()
            sdk.rpc_manager.clear()
            pulumi_mocks.set_mocks(mocks, project=project, stack=stack, preview=False, logger=logger, monitor=monitor)
            _sync_await(run_pulumi_func(program))
            root = pulumi_settings.get_root_resource()
            raw_outputs = dict(getattr(root, "outputs", {}) or {})
            outputs = {k: _sync_await(_resolve(v)) for k, v in sorted(raw_outputs.items())}
            return Recording(
                project=project,
                stack=stack,
                resources=list(monitor.registrations),
                outputs=outputs,
                invocations=list(monitor.invocations),
                log_warnings=list(collector.messages),
            )
        except BaseException:
            # The program's error propagates; the Outputs it abandoned would each log "exception was never
            # retrieved" with a traceback when collected (seconds of noise per failed run). Drop those.
            loop.set_exception_handler(_ignore_abandoned)
            raise
        finally:
            logger.removeHandler(collector)
            loop.run_until_complete(loop.shutdown_default_executor())
            for tl in thread_loops:
                tl.close()
            asyncio.set_event_loop(None)
            loop.close()

    return contextvars.Context().run(go)
