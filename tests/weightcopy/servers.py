"""Local stand-ins for the clouds' object stores, on loopback: moto's S3 server and Azurite's Blob service, and a
proxy that answers as a store does to an identity it does not (yet) authorize.

Each server yields the copier's storage options for a fresh bucket (container), so every test writes to its own.
"""

import base64
import http.client
import itertools
import os
import shutil
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
AZURITE = ROOT / ".tools" / "node_modules" / ".bin" / "azurite-blob"
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
"""Azurite's well-known development account (documented in Azurite's README; not a secret)."""
S3_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
_names = itertools.count()



class S3Server:
    """moto's S3 server in a thread of this process."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        os.environ.update(S3_CREDENTIALS)
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
        self.server.start()
        self.endpoint = f"http://127.0.0.1:{self.server._port}"

    def options(self) -> dict[str, Any]:
        """s3fs options for this server."""
        return {"endpoint_url": self.endpoint, "key": "testing", "secret": "testing"}

    def bucket(self) -> str:
        """A new bucket's name."""
        import boto3

        name = f"k3-weights-{os.getpid()}-{next(_names)}"
        boto3.client("s3", endpoint_url=self.endpoint, **_boto_credentials()).create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        self.server.stop()


def _boto_credentials() -> dict[str, str]:
    return {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}


class BlobServer:
    """Azurite's Blob service in a child process, its data in memory (tests) or in ``workdir`` (the benchmark)."""

    def __init__(self, workdir: Path, in_memory: bool = True) -> None:
        if not AZURITE.exists():
            raise RuntimeError(f"{AZURITE} is missing: ./scripts/test installs Azurite under .tools (npm)")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [str(AZURITE), "--silent", "--skipApiVersionCheck", "--loose", "--blobHost", "127.0.0.1",
             "--blobPort", str(self.port),
             *(["--inMemoryPersistence"] if in_memory else ["--location", str(workdir)])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            self.stop()
            raise RuntimeError("Azurite did not start")
        self.connection_string = (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint=http://127.0.0.1:{self.port}/{AZURITE_ACCOUNT};")

    def options(self) -> dict[str, Any]:
        """adlfs options for this server."""
        return {"connection_string": self.connection_string}

    def bucket(self) -> str:
        """A new container's name."""
        from azure.storage.blob import BlobServiceClient

        name = f"k3-weights-{os.getpid()}-{next(_names)}"
        BlobServiceClient.from_connection_string(self.connection_string).create_container(name)
        return name

    def stop(self) -> None:
        self.proc.kill()  # nothing to keep
        self.proc.wait(timeout=10)


@contextmanager
def s3_server() -> Iterator[S3Server]:
    s = S3Server()
    try:
        yield s
    finally:
        s.stop()


@contextmanager
def blob_server(workdir: Path) -> Iterator[BlobServer]:
    s = BlobServer(workdir)
    try:
        yield s
    finally:
        s.stop()
        shutil.rmtree(workdir, ignore_errors=True)


class Refusal:
    """What a store answers a caller it does not authorize: status, headers and body, as the cloud sends them."""

    def __init__(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.status, self.body, self.headers = status, body, dict(headers or {})


S3_ACCESS_DENIED = Refusal(403, b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
                                b"<Message>Access Denied</Message><RequestId>K3TEST</RequestId></Error>",
                           {"Content-Type": "application/xml"})
"""S3's answer to a principal without s3:* on the bucket (HEAD requests get the status alone)."""
AZURE_PERMISSION_MISMATCH = Refusal(
    403, b'<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthorizationPermissionMismatch</Code><Message>This '
         b"request is not authorized to perform this operation using this permission.</Message></Error>",
    {"Content-Type": "application/xml", "x-ms-error-code": "AuthorizationPermissionMismatch"})
"""Blob storage's answer to an Entra identity without a Storage Blob Data role on the container."""
_OSS_DENIED_BODY = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code><Message>You have no '
                    b"right to access this object because of bucket acl.</Message><RequestId>K3TEST</RequestId>"
                    b"<HostId>b.oss</HostId><EC>0003-00000001</EC></Error>")
OSS_ACCESS_DENIED = Refusal(
    403, _OSS_DENIED_BODY,
    # A HEAD answer has no body: OSS sends the error document base64-encoded in x-oss-err instead.
    {"Content-Type": "application/xml", "x-oss-request-id": "K3TEST", "x-oss-ec": "0003-00000001",
     "x-oss-err": base64.b64encode(_OSS_DENIED_BODY).decode()})
"""OSS's answer to a RAM role without the bucket's actions."""


class RefusingProxy:
    """A reverse proxy on loopback that refuses the first ``refusals`` requests as ``refusal`` says (a grant still
    propagating), then forwards every request to ``upstream`` (``None``: refuses for ever). ``seen`` counts requests."""

    def __init__(self, upstream: str | None, refusal: Refusal, refusals: float) -> None:
        from urllib.parse import urlparse

        proxy = self
        self.seen = 0
        self.refused = 0
        lock = threading.Lock()
        target = urlparse(upstream) if upstream else None

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with lock:
                    proxy.seen += 1
                    refuse = target is None or proxy.refused < refusals
                    if refuse:
                        proxy.refused += 1
                if refuse:
                    payload = b"" if self.command == "HEAD" else refusal.body
                    self.send_response(refusal.status)
                    for k, v in refusal.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(refusal.body) if self.command == "HEAD" else len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                assert target is not None
                conn = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive")}
                conn.request(self.command, self.path, body=body, headers=headers)
                r = conn.getresponse()
                data = r.read()
                self.send_response(r.status, r.reason)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "keep-alive", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(int(r.getheader("Content-Length") or 0)
                                                       if self.command == "HEAD" else len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def __enter__(self) -> "RefusingProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
