"""Local stand-ins for the clouds' object stores, on loopback: moto's S3 server and Azurite's Blob service.

Each yields the copier's storage options for a fresh bucket (container), so every test writes to its own.
"""

import itertools
import os
import shutil
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[2]
AZURITE = ROOT / ".tools" / "node_modules" / ".bin" / "azurite-blob"
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
"""Azurite's well-known development account (documented in Azurite's README; not a secret)."""
S3_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
_names = itertools.count()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
