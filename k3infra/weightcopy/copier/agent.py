"""The node agent (one per GPU node): keeps the node copy of the weights at the bucket's revision and carries the
engine's caches through the bucket, restoring them into the node's empty cache directory and saving them once a
server on the node has warmed up and served. Every step is retried on the next round; none fails the agent."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

from .caches import cache_key, restore_cache, save_cache
from .node import node_copy
from .plan import Repo
from .store import ObjectStore

Log = Callable[[str], None]


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass
class Agent:
    """One node's agent: what it keeps (``node_dir`` for the weights, ``cache_dir`` for the caches) and its state."""

    store: ObjectStore
    repo: Repo
    node_dir: str | None
    cache_dir: str | None
    cache_parts: Mapping[str, str] = field(default_factory=dict)
    log: Log = _log
    copied: bool = False
    restored: str = ""
    saved: bool = False

    def round(self) -> None:
        """One pass: the caches restored once (first: a fresh node takes them in seconds, before any server starts
        there, while the weights take the fill's hours on GCS), the node copy brought to the bucket's revision, the
        caches saved once."""
        key = cache_key(self.cache_parts) if self.cache_dir else ""
        if self.cache_dir and (not self.restored or self.restored.startswith("ignored")):
            self.restored = restore_cache(self.store, self.repo.dest, key, self.cache_parts, self.cache_dir, self.log)
        try:
            if self.node_dir:
                self.copied = node_copy(self.store, self.repo, self.node_dir, self.log)
        except Exception as e:  # noqa: BLE001 - retried next round; a pod meanwhile reads the bucket
            self.copied = False
            self.log(f"node copy failed ({type(e).__name__}: {e}); retrying next round")
        if self.cache_dir and not self.saved:
            self.saved = save_cache(self.store, self.repo.dest, key, self.cache_parts, self.cache_dir, self.log)


def run(agent: Agent, interval: float, rounds: int | None = None) -> None:
    """Rounds every ``interval`` seconds, for ever (or ``rounds`` of them)."""
    done = 0
    while rounds is None or done < rounds:
        agent.round()
        done += 1
        if rounds is None or done < rounds:
            time.sleep(interval)
