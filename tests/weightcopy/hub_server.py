"""A Hugging Face Hub that serves generated models on loopback: enough of the Hub's HTTP API for huggingface_hub
(``HF_ENDPOINT``) to list a revision (model info, recursive tree with LFS metadata) and stream its files
(``resolve`` with HEAD and byte ranges). Files live on disk and go out with ``sendfile``; ``rate`` throttles each
connection (bytes per second) so a test can stop a copy mid-way.
"""

import hashlib
import json
import os
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

COMMIT = "a" * 40


@dataclass(frozen=True)
class HubFile:
    """A file of the served repository."""

    path: str
    size: int
    lfs: bool
    sha256: str
    git_oid: str


def safetensors_file(path: Path, size: int, seed: int) -> None:
    """A valid safetensors file of exactly ``size`` bytes: a header naming one uint8 tensor, then bytes that
    differ per seed (a repeated pseudo-random block: fast to write, distinct per file)."""
    def header(n: int) -> bytes:
        body = json.dumps({"w": {"dtype": "U8", "shape": [n], "data_offsets": [0, n]}}).encode()
        body += b" " * (-len(body) % 8)
        return struct.pack("<Q", len(body)) + body

    h = header(size)
    h = header(size - len(h))
    assert len(h) < size
    n = size - len(h)
    block = hashlib.sha256(str(seed).encode()).digest() * (2**20 // 32)
    with open(path, "wb") as f:
        f.write(h)
        while n > 0:
            f.write(block[: min(n, len(block))])
            n -= min(n, len(block))


def generate(root: Path, shards: list[int], seed: int = 0) -> list[HubFile]:
    """A model directory: ``shards`` safetensors files of the given sizes (LFS), an index and a config (git)."""
    root.mkdir(parents=True, exist_ok=True)
    names = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    for i, (name, size) in enumerate(zip(names, shards)):
        safetensors_file(root / name, size, seed * 1000 + i)
    (root / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {f"w{i}": n for i, n in enumerate(names)}}))
    (root / "config.json").write_text(json.dumps({"architectures": ["Generated"], "seed": seed}))
    return describe(root)


def describe(root: Path) -> list[HubFile]:
    """What the Hub states for each file: size, sha256 for LFS (safetensors) files, the git blob id."""
    out = []
    for p in sorted(x for x in root.rglob("*") if x.is_file()):
        data_hash, size = hashlib.sha256(), p.stat().st_size
        git = hashlib.sha1(f"blob {size}\0".encode())
        with open(p, "rb") as f:
            while c := f.read(2**22):
                data_hash.update(c)
                git.update(c)
        lfs = p.suffix == ".safetensors"
        out.append(HubFile(str(p.relative_to(root)), size, lfs, data_hash.hexdigest(),
                           # an LFS file's git blob is its pointer file; its id is not the content's
                           hashlib.sha1(p.name.encode()).hexdigest() if lfs else git.hexdigest()))
    return out


class Hub:
    """The server: ``repos`` maps a repo id to its directory. Start with ``with Hub(...) as hub``;
    ``hub.endpoint`` goes into ``HF_ENDPOINT``."""

    def __init__(self, repos: dict[str, Path], rate: float | None = None) -> None:
        self.repos = {r: (p, {f.path: f for f in describe(p)}) for r, p in repos.items()}
        self.rate = rate
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_HEAD(self) -> None:
                hub.handle(self, head=True)

            def do_GET(self) -> None:
                hub.handle(self, head=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "Hub":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _json(self, h: BaseHTTPRequestHandler, body: object, status: int = 200) -> None:
        data = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _entry(self, f: HubFile) -> dict[str, object]:
        e: dict[str, object] = {"type": "file", "oid": f.git_oid, "size": f.size, "path": f.path}
        if f.lfs:
            e["lfs"] = {"oid": f.sha256, "size": f.size, "pointerSize": 134}
        return e

    def handle(self, h: BaseHTTPRequestHandler, head: bool) -> None:
        url = urlparse(h.path)
        path = unquote(url.path)
        self.requests.append(f"{h.command} {path}")
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/([^/]+))?", path)
        if m and m.group(1) in self.repos:
            files = self.repos[m.group(1)][1]
            return self._json(h, {"id": m.group(1), "modelId": m.group(1), "sha": COMMIT, "private": False,
                                  "siblings": [{"rfilename": p} for p in files]})
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/([^/]+)(/.*)?", path)
        if m and m.group(1) in self.repos:
            files = self.repos[m.group(1)][1]
            prefix = (m.group(3) or "").strip("/")
            recursive = "recursive=true" in url.query.lower()
            entries: list[dict[str, object]] = []
            dirs = set()
            for p, f in sorted(files.items()):
                if prefix and not p.startswith(prefix + "/"):
                    continue
                rest = p[len(prefix) + 1:] if prefix else p
                if "/" in rest and not recursive:
                    d = (prefix + "/" if prefix else "") + rest.split("/")[0]
                    if d not in dirs:
                        dirs.add(d)
                        entries.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": d})
                    continue
                entries.append(self._entry(f))
            return self._json(h, entries)
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m and m.group(1) in self.repos and m.group(3) in self.repos[m.group(1)][1]:
            root, files = self.repos[m.group(1)]
            return self._file(h, root / m.group(3), files[m.group(3)], head)
        self._json(h, {"error": f"not found: {path}"}, 404)

    def _file(self, h: BaseHTTPRequestHandler, p: Path, f: HubFile, head: bool) -> None:
        start, end = 0, f.size - 1
        rng = h.headers.get("Range")
        status = 200
        if rng:
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
            if m:
                start, end = int(m.group(1)), int(m.group(2)) if m.group(2) else f.size - 1
                status = 206
        n = max(0, end - start + 1)
        h.send_response(status)
        h.send_header("Content-Length", str(n))
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("ETag", f'"{f.sha256 if f.lfs else f.git_oid}"')
        h.send_header("X-Repo-Commit", COMMIT)
        h.send_header("Accept-Ranges", "bytes")
        if status == 206:
            h.send_header("Content-Range", f"bytes {start}-{end}/{f.size}")
        h.end_headers()
        if head or n == 0:
            return
        with open(p, "rb") as src:
            if self.rate is None:
                h.wfile.flush()
                sock: socket.socket = h.connection
                sock.sendfile(src, offset=start, count=n)
                return
            src.seek(start)
            chunk = max(1, int(self.rate / 20))
            while n > 0:
                data = src.read(min(chunk, n))
                h.wfile.write(data)
                n -= len(data)
                time.sleep(len(data) / self.rate)


def serve_forever(root: str, repo: str) -> None:  # pragma: no cover - for benchmarks run by hand
    """``python -m tests.weightcopy.hub_server DIR REPO``: serve DIR as REPO until interrupted."""
    with Hub({repo: Path(root)}) as hub:
        print(hub.endpoint, flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":  # pragma: no cover
    import sys

    serve_forever(sys.argv[1], sys.argv[2])
