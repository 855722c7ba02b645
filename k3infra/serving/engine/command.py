"""One container's engine invocation (``EngineCommand``) and the bash it runs."""

import re
import shlex
from dataclasses import dataclass, field
from typing import Sequence

from ...catalog import EngineName
from .spec import Role

_SAFE = re.compile(r"[A-Za-z0-9_./:=,+@%-]+")


def shell_word(token: str) -> str:
    """Quote one argument for bash, keeping ``$VAR``/``${VAR}`` (shell) and ``$(VAR)`` (kubelet) references live.

    The kubelet expands ``$(VAR)`` in container args before bash runs (002 §4.4 relies on it for the
    LeaderWorkerSet's ``$(LWS_LEADER_ADDRESS)``); a token with ``$`` is double-quoted so bash still expands ``${POD_INDEX}``.
    """
    if _SAFE.fullmatch(token):
        return token
    if "$" in token:
        return '"' + token.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`") + '"'
    return shlex.quote(token)


@dataclass(frozen=True)
class EngineCommand:
    """One container's engine invocation: the program, its arguments, its environment, what runs first."""

    engine: EngineName
    role: Role
    program: list[str]
    """``["vllm", "serve"]`` or ``["sglang", "serve"]``."""
    args: list[str]
    """Arguments after the program: for vLLM the model first (positional), then the flags; for SGLang the
    flags, ``--model-path`` among them."""
    env: dict[str, str]
    """Environment of the engine: the recipe's and the seeds' (catalog/recipes.py ``IGNORED_ENV`` lists the
    seeds' variables the pinned release no longer reads, kept for the day-0 images)."""
    before: list[str] = field(default_factory=list)
    """Shell lines run before the engine."""
    port: int = 0
    """The HTTP port the engine serves on (0 when this role serves no HTTP)."""
    extra_ports: dict[str, int] = field(default_factory=dict)
    """Other ports the group's pods reach on this one (the distributed rendezvous), by name."""
    left_off: tuple[str, ...] = ()
    """The recipe's variables not set because they do not work with the spec's model source or load format
    (catalog/recipes.py ``ENV_SCOPE``)."""

    @property
    def serves_http(self) -> bool:
        """True for the pod that answers ``/health`` and ``/v1/...``."""
        return self.port != 0

    @property
    def argv(self) -> list[str]:
        """The full command: program and arguments."""
        return [*self.program, *self.args]

    @property
    def flags(self) -> list[str]:
        """The arguments without vLLM's positional model."""
        if self.engine == EngineName.VLLM and self.args and not self.args[0].startswith("-"):
            return self.args[1:]
        return list(self.args)

    def api_server_args(self) -> list[str]:
        """Arguments for an image whose entrypoint is the OpenAI server itself (HyperPod's ``worker.args``,
        002 §3.1): ``--model MODEL`` followed by the flags."""
        if self.engine != EngineName.VLLM or not self.program:
            raise ValueError("api_server_args applies to a vLLM engine command")
        return ["--model", self.args[0], *self.flags]

    def script(self, setup: Sequence[str] = ()) -> str:
        """The bash script a container runs (``command: [/bin/bash, -c]``): ``setup`` lines (the pool's
        driver and NCCL preparation, 000), the lines to run first, then ``exec`` the engine.

        No ``set -x``: it would print the API key the engine reads from its environment.
        """
        lines = ["set -eo pipefail", *setup, *self.before]
        if self.program:
            lines.append("exec " + " ".join(shell_word(t) for t in self.argv))
        return "\n".join(lines) + "\n"


def by_pod_index(leader: EngineCommand, worker: EngineCommand, setup: Sequence[str] = (),
                 index_env: str = "POD_INDEX") -> str:
    """One script for every pod of a StatefulSet (000's pattern), choosing the role by the pod's index."""
    lead = leader.script().splitlines()[1:]
    work = worker.script().splitlines()[1:]
    body = [
        "set -eo pipefail",
        *setup,
        f'if [ "${{{index_env}}}" = "0" ]; then',
        *("  " + x for x in lead),
        "else",
        *("  " + x for x in work),
        "fi",
    ]
    return "\n".join(body) + "\n"
