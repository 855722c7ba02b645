"""A local S3-compatible server (moto's, from the test extras) holding the weight bucket with a small fixture."""

import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import boto3
from tests.ports import free_port

ACCESS_KEY_ID = "AKIAE2ELOCALSTORE0001"
SECRET_ACCESS_KEY = "e2e-secret-access-key-never-in-the-state"
FIXTURE = {"models/moonshotai/Kimi-K3/config.json": b'{"model_type": "kimi_k3"}\n'}
"""Objects the bucket starts with: what destroy must leave in place (k3infra never deletes weights)."""



@dataclass
class S3Server:
    process: subprocess.Popen[bytes]
    endpoint: str

    @classmethod
    def start(cls, log: Path, bucket: str, timeout: float = 60) -> "S3Server":
        port = free_port()
        with log.open("wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                    stdout=out, stderr=subprocess.STDOUT)
        server = cls(proc, f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(server.endpoint, timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    server.stop()
                    raise AssertionError(f"moto's S3 server did not start: {log.read_text()[-2000:]}")
                time.sleep(0.3)
        s3 = server.client()
        s3.create_bucket(Bucket=bucket)
        for key, body in FIXTURE.items():
            s3.put_object(Bucket=bucket, Key=key, Body=body)
        return server

    def client(self):
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY)

    def keys(self, bucket: str) -> list[str]:
        return sorted(o["Key"] for o in self.client().list_objects_v2(Bucket=bucket).get("Contents", []))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)
