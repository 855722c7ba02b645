"""The node agent (one per GPU node): keeps the node copy of the weights at the bucket's revision and carries the
engine's caches through the bucket, restoring them into the node's empty cache directory and saving them once a
server on the node has warmed up and served. Every step is retried on the next round; none fails the agent."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from .caches import cache_key, restore_cache, save_cache
from .node import node_copy
from .plan import Repo
from .store import ObjectStore

Log = Callable[[str], None]


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass
class Agent:
    """One node's agent: what it keeps (``node_dir`` for the weights; under ``cache_root``, one directory per key of
    ``caches``, each key's parts: a topology's roles have one each) and its state."""

    store: ObjectStore
    repo: Repo
    node_dir: str | None
    cache_root: str | None
    caches: Sequence[Mapping[str, str]] = ()
    log: Log = _log
    copied: bool = False
    restored: dict[str, str] = field(default_factory=dict)
    """What the restore of each key did (copier.caches restore_cache), by key."""
    saved: dict[str, bool] = field(default_factory=dict)
    """Whether the bucket holds each key's caches, by key."""

    def round(self) -> None:
        """One pass: every key's caches restored once (first: a fresh node takes them before any server starts
        there, while the weights take the fill's hours on GCS), the node copy brought to the bucket's revision, each
        key's caches saved once."""
        keyed = [(cache_key(parts), parts) for parts in self.caches] if self.cache_root else []
        for key, parts in keyed:
            if self.restored.get(key, "ignored").startswith("ignored"):
                self.restored[key] = restore_cache(self.store, self.repo.dest, key, parts,
                                                   Path(str(self.cache_root)) / key, self.log)
        try:
            if self.node_dir:
                self.copied = node_copy(self.store, self.repo, self.node_dir, self.log)
        except Exception as e:  # noqa: BLE001 - retried next round; a pod meanwhile reads the bucket
            self.copied = False
            self.log(f"node copy failed ({type(e).__name__}: {e}); retrying next round")
        for key, parts in keyed:
            if not self.saved.get(key):
                self.saved[key] = save_cache(self.store, self.repo.dest, key, parts,
                                             Path(str(self.cache_root)) / key, self.log)


def run(agent: Agent, interval: float, rounds: int | None = None) -> None:
    """Rounds every ``interval`` seconds, for ever (or ``rounds`` of them)."""
    done = 0
    while rounds is None or done < rounds:
        agent.round()
        done += 1
        if rounds is None or done < rounds:
            time.sleep(interval)
