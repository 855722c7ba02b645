"""One file: streamed from its source into an object in parts, hashed on the way, committed only when verified."""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Iterable, Iterator

from .hashing import Hasher
from .plan import RepoFile
from .store import ObjectStore


class CopyError(RuntimeError):
    """A file that could not be copied and verified."""


_DONE = object()


def parts(chunks: Iterable[bytes], part_size: int) -> Iterator[bytes]:
    """Regroup a byte stream into parts of ``part_size`` (the last may be shorter), copying each byte once."""
    pending: list[bytes | memoryview] = []
    size = 0
    for c in chunks:
        view = memoryview(c)
        while len(view):
            take = min(len(view), part_size - size)
            pending.append(c if take == len(c) and not pending and size == 0 and take == part_size else view[:take])
            size += take
            view = view[take:]
            if size == part_size:
                only = pending[0]
                yield only if len(pending) == 1 and isinstance(only, bytes) else b"".join(pending)
                pending, size = [], 0
    if pending:
        yield b"".join(pending)


def copy_file(f: RepoFile, source: Iterable[bytes], store: ObjectStore, key: str, part_size: int,
              queue_parts: int, on_part: Callable[[int], None] = lambda n: None) -> int:
    """Stream ``source`` into ``key``, verified: returns the bytes written. A reader thread fills a queue of at
    most ``queue_parts`` parts while this thread uploads; the hash and size are checked before the commit.
    ``on_part`` is told the size of each part once it is uploaded."""
    q: queue.Queue[Any] = queue.Queue(maxsize=max(1, queue_parts))
    hasher = Hasher(f)
    failure: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        try:
            for part in parts(source, part_size):
                hasher.update(part)
                while not stop.is_set():
                    try:
                        q.put(part, timeout=0.5)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
        except BaseException as e:  # noqa: BLE001 - handed to the writer
            failure.append(e)
        finally:
            q.put(_DONE)

    writer = store.writer(key, f.expected_hash, part_size)
    reader = threading.Thread(target=read, name=f"read {f.path}", daemon=True)
    reader.start()
    written = 0
    try:
        while (part := q.get()) is not _DONE:
            writer.write(part)
            written += len(part)
            on_part(len(part))
        reader.join()
        if failure:
            raise CopyError(f"{f.repo}/{f.path}: reading from the Hub failed: {failure[0]}") from failure[0]
        got = hasher.value()
        if written != f.size or got != f.expected_hash:
            raise CopyError(f"{f.repo}/{f.path}: got {written} bytes with {got}; the Hub states {f.size} bytes with "
                            f"{f.expected_hash}")
    except BaseException:
        stop.set()
        writer.abort()
        raise
    writer.commit()
    return written
