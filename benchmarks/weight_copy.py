"""Throughput of the weight copier against the plainest client, between local servers on loopback.

A generated model (``--shards`` safetensors files of ``--shard-mib`` MiB, plus an index and a config) is served by
the loopback Hub (tests/weightcopy/hub_server.py) and copied into moto's S3 server and Azurite's Blob service:

- pipelined: the copier package (k3infra/weightcopy/copier) as the Job runs it (``python -m copier``), N worker processes (``sync --workers N --index i``,
  default streams and part size), verified against the Hub's sha256 and marked complete;
- plain: the same files, the same N-way size-balanced split, each worker copying one file at a time with the
  standard library alone: one GET from the Hub, each 64 MiB of its body sent as the next part of the upload the
  real shards need (S3 multipart upload, Azure Put Block + Put Block List: one PUT is capped at 5 GiB on S3 and
  5,000 MiB on Blob, and Kimi K3's shards are ~16 GB). No hashing, no verification, no library: the loopback's
  limit for this workload on this machine.

For 1, 2 and 4 workers, and 1, 4 and 16 files in flight per pipelined worker (``--streams``), it prints GB/s of both,
the pipelined copy's ratio to the plain client and to one worker with one stream, measured side by side in one run:
throughput rises with workers and streams until the loopback servers or the machine's cores limit it. The target is
pipelined >= 0.7 x plain from the copier's default streams up (one stream is the baseline, not held to it). Every run
writes into a fresh bucket (container). The figures depend on the machine's load: the script prints the load
average before and after.

    python benchmarks/weight_copy.py [--shards 8] [--shard-mib 512] [--workers 1 2 4] [--streams 1 4 16]
                                     [--stores s3 az]
"""

import argparse
import base64
import concurrent.futures
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from k3infra.catalog.transfer import SYNC_STREAMS_PER_WORKER  # noqa: E402
from k3infra.weightcopy.copier import plan as copier  # noqa: E402
from tests.weightcopy.hub_server import Hub, generate  # noqa: E402
from tests.weightcopy.servers import S3_CREDENTIALS, BlobServer, S3Server  # noqa: E402

TARGET_RATIO = 0.7
REPO = "bench/generated"
PIPELINED_OPTIONS: dict[str, dict[str, object]] = {"s3": {"config_kwargs": {"s3": {"payload_signing_enabled": False}}}}
"""What the loopback changes about the copier's requests: over plain HTTP botocore signs every part's payload (one
more SHA-256 pass), which it does not over HTTPS with a checksum header (botocore/auth.py,
S3SigV4Auth._should_sha256_sign_payload), i.e. against real S3. The plain client signs nothing."""

PART = 64 << 20
"""Part size of both clients (the copier's default, copier.sizes.DEFAULT_PART_SIZE)."""


def _request(url: str, method: str, body: bytes = b"", headers: dict[str, str] | None = None) -> bytes:
    u = urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port)
    conn.request(method, u.path + (f"?{u.query}" if u.query else ""), body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    if r.status >= 300:
        raise RuntimeError(f"{method} {url}: {r.status} {data[:200]!r}")
    return data


class PlainS3:
    """S3's multipart upload in plain HTTP (moto's server checks no signature)."""

    def __init__(self, endpoint: str, bucket: str) -> None:
        self.base = f"{endpoint}/{bucket}/plain"

    def upload(self, path: str, parts: "list[bytes] | object") -> None:
        url = f"{self.base}/{path}"
        upload_id = re.search(rb"<UploadId>([^<]+)</UploadId>", _request(f"{url}?uploads", "POST")).group(1).decode()
        etags = []
        for n, part in enumerate(parts, 1):  # type: ignore[arg-type]
            u = urlparse(f"{url}?partNumber={n}&uploadId={upload_id}")
            conn = http.client.HTTPConnection(u.hostname, u.port)
            conn.request("PUT", f"{u.path}?{u.query}", body=part)
            r = conn.getresponse()
            r.read()
            etags.append(r.headers["ETag"])
            conn.close()
        body = "<CompleteMultipartUpload>" + "".join(
            f"<Part><PartNumber>{n}</PartNumber><ETag>{e}</ETag></Part>" for n, e in enumerate(etags, 1)) + \
            "</CompleteMultipartUpload>"
        _request(f"{url}?uploadId={upload_id}", "POST", body.encode())


class PlainBlob:
    """Azure's Put Block and Put Block List in plain HTTP, with a container SAS."""

    def __init__(self, base: str, sas: str) -> None:
        self.base, self.sas = base, sas

    def upload(self, path: str, parts: "list[bytes] | object") -> None:
        url = f"{self.base}/plain/{path}"
        ids = []
        for n, part in enumerate(parts):  # type: ignore[arg-type]
            block = base64.b64encode(f"{n:08d}".encode()).decode()
            _request(f"{url}?comp=block&blockid={quote(block)}&{self.sas}", "PUT", part)
            ids.append(block)
        body = "<BlockList>" + "".join(f"<Latest>{i}</Latest>" for i in ids) + "</BlockList>"
        _request(f"{url}?comp=blocklist&{self.sas}", "PUT", body.encode())


def plain_copy(hub: str, files: list[copier.RepoFile], target: "PlainS3 | PlainBlob") -> int:
    """One file at a time: one GET from the Hub, each 64 MiB of its body sent as the next part as it arrives."""
    moved = 0
    for f in files:
        src = urlparse(f"{hub}/{REPO}/resolve/main/{f.path}")
        get = http.client.HTTPConnection(src.hostname, src.port)
        get.request("GET", src.path)
        body = get.getresponse()

        def parts():  # type: ignore[no-untyped-def]
            while part := body.read(PART):
                yield part

        sizes = []
        target.upload(f.path, (sizes.append(len(p)) or p for p in parts()))
        moved += sum(sizes)
        get.close()
    return moved


def run_plain(hub: str, files: list[copier.RepoFile], workers: int, target: "PlainS3 | PlainBlob") -> float:
    shards = copier.assign(files, workers)
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        moved = sum(pool.map(lambda s: plain_copy(hub, s, target), shards))
    return moved / (time.perf_counter() - start)


def run_pipelined(hub: str, dest: str, workers: int, options: dict[str, object], total: int, streams: int) -> float:
    env = {**os.environ, **S3_CREDENTIALS, "HF_ENDPOINT": hub, "K3_COPY_STORAGE_OPTIONS": json.dumps(options),
           "PYTHONPATH": str(ROOT / "k3infra" / "weightcopy")}
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "copier", "sync", "--repo",
                               f"{REPO}@main={dest}", "--workers", str(workers), "--index", str(i),
                               "--streams", str(streams)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) for i in range(workers)]
    reports = [json.loads((p.communicate()[0] or b"{}").decode().strip().splitlines()[-1]) for p in procs]
    elapsed = time.perf_counter() - start
    if any(p.returncode for p in procs) or sum(r["bytesCopied"] for r in reports) != total:
        raise RuntimeError(f"the copier failed: {reports}")
    return total / elapsed


def main() -> int:
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("--shards", type=int, default=8)
    a.add_argument("--shard-mib", type=int, default=512)
    a.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    a.add_argument("--streams", type=int, nargs="+", default=[1, 4, 16],
                   help="files in flight per pipelined worker (copier sync --streams); 1 is the baseline")
    a.add_argument("--stores", nargs="+", default=["s3", "az"], choices=["s3", "az"])
    args = a.parse_args()
    print(f"load average before: {os.getloadavg()}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="k3-bench-") as tmp:
        model = Path(tmp) / "model"
        generate(model, [args.shard_mib << 20] * args.shards, seed=1)
        with Hub({REPO: model}) as hub:
            os.environ["HF_ENDPOINT"] = hub.endpoint
            import huggingface_hub.constants as c

            c.ENDPOINT = hub.endpoint
            _, files = copier.list_repo_files(REPO, "main", None)
            total = sum(f.size for f in files)
            print(f"model: {len(files)} files, {total / 1e9:.2f} GB")
            rows = []
            for store in args.stores:
                server = S3Server() if store == "s3" else BlobServer(Path(tmp) / "azurite", in_memory=False)
                try:
                    for n in args.workers:
                        bucket = server.bucket()
                        target = (PlainS3(server.endpoint, bucket) if isinstance(server, S3Server) else
                                  PlainBlob(f"http://127.0.0.1:{server.port}/devstoreaccount1/{bucket}",
                                            _container_sas(server, bucket)))
                        plain = run_plain(hub.endpoint, files, n, target)
                        for k in args.streams:
                            piped = run_pipelined(hub.endpoint, f"{store}://{bucket}/pipelined-{k}", n,
                                                  {**server.options(), **PIPELINED_OPTIONS.get(store, {})}, total, k)
                            rows.append((store, n, k, plain, piped))
                            print(f"  {store} {n} worker(s) x {k} stream(s): plain {plain / 1e9:.3f} GB/s, pipelined "
                                  f"{piped / 1e9:.3f} GB/s", flush=True)
                finally:
                    server.stop()
    print(f"load average after: {os.getloadavg()}")
    print()
    print("| store | workers | streams | plain GB/s | pipelined GB/s | pipelined / plain | / 1 worker x 1 stream |")
    print("|---|---|---|---|---|---|---|")
    ok = True
    base = {store: piped for store, n, k, _, piped in rows if (n, k) == (min(args.workers), min(args.streams))}
    for store, n, k, plain, piped in rows:
        ratio = piped / plain
        ok &= ratio >= TARGET_RATIO or k < SYNC_STREAMS_PER_WORKER
        print(f"| {store} | {n} | {k} | {plain / 1e9:.3f} | {piped / 1e9:.3f} | {ratio:.2f} | "
              f"{piped / base[store]:.2f} |")
    print(f"\ntarget: pipelined >= {TARGET_RATIO} x plain: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


def _container_sas(server: BlobServer, container: str) -> str:
    from datetime import datetime, timedelta, timezone

    from azure.storage.blob import ContainerSasPermissions, generate_container_sas

    from tests.weightcopy.servers import AZURITE_ACCOUNT, AZURITE_KEY

    return generate_container_sas(AZURITE_ACCOUNT, container, account_key=AZURITE_KEY,
                                  permission=ContainerSasPermissions(write=True, create=True),
                                  expiry=datetime.now(timezone.utc) + timedelta(hours=2))


if __name__ == "__main__":
    sys.exit(main())
