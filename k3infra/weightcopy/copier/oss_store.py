"""``oss://`` buckets through the OSS SDK (alibabacloud-oss-v2): ossfs writes appendable objects, capped at 5 GB,
without metadata."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from .sizes import READ_CHUNK
from .store import HASH_METADATA_KEY, ObjectStat, Writer


class OssWriter:
    """A multipart upload through the OSS SDK (alibabacloud-oss-v2)."""

    def __init__(self, client: Any, oss: Any, bucket: str, key: str, hash_value: str) -> None:
        self.client, self.oss, self.bucket, self.key = client, oss, bucket, key
        self.upload_id = client.initiate_multipart_upload(oss.InitiateMultipartUploadRequest(
            bucket=bucket, key=key, metadata={HASH_METADATA_KEY: hash_value})).upload_id
        self.parts: list[Any] = []

    def write(self, data: bytes) -> None:
        """Upload the next part."""
        n = len(self.parts) + 1
        r = self.client.upload_part(self.oss.UploadPartRequest(bucket=self.bucket, key=self.key, part_number=n,
                                                               upload_id=self.upload_id, body=data))
        self.parts.append(self.oss.UploadPart(part_number=n, etag=r.etag))

    def commit(self) -> None:
        """Complete the multipart upload."""
        self.client.complete_multipart_upload(self.oss.CompleteMultipartUploadRequest(
            bucket=self.bucket, key=self.key, upload_id=self.upload_id,
            complete_multipart_upload=self.oss.CompleteMultipartUpload(parts=self.parts)))

    def abort(self) -> None:
        """Abort the multipart upload."""
        self.client.abort_multipart_upload(self.oss.AbortMultipartUploadRequest(
            bucket=self.bucket, key=self.key, upload_id=self.upload_id))


class OssStore:
    """OSS through its SDK. Credentials: the pod's RRSA role (ALIBABA_CLOUD_ROLE_ARN, ..._OIDC_PROVIDER_ARN,
    ..._OIDC_TOKEN_FILE, injected by ack-pod-identity-webhook) through alibabacloud-credentials' default chain."""

    def __init__(self, options: Mapping[str, Any], client: Any = None, sdk: Any = None) -> None:
        if sdk is None:
            import alibabacloud_oss_v2 as sdk  # pyright: ignore[reportMissingImports]
        oss = self.oss = sdk
        if client is None:
            cfg = oss.config.load_default()
            cfg.region = options["region"]
            if options.get("endpoint"):
                cfg.endpoint = options["endpoint"]
            cfg.credentials_provider = _oss_credentials(oss)
            client = oss.Client(cfg)
        self.client = client

    @staticmethod
    def _split(key: str) -> tuple[str, str]:
        bucket, _, path = key.partition("/")
        return bucket, path

    def stat(self, key: str) -> ObjectStat | None:
        """Size and hash metadata, or None when the object does not exist."""
        bucket, path = self._split(key)
        try:
            r = self.client.head_object(self.oss.HeadObjectRequest(bucket=bucket, key=path))
        except Exception as e:  # the SDK wraps a 404 in OperationError
            if "404" in str(e) or "NoSuchKey" in str(e):
                return None
            raise
        meta = {k.lower(): v for k, v in (r.metadata or {}).items()}
        return ObjectStat(size=int(r.content_length), hash=meta.get(HASH_METADATA_KEY))

    def writer(self, key: str, hash_value: str, part_size: int) -> Writer:
        """A multipart upload carrying ``hash_value`` as ``x-oss-meta-k3sha256``."""
        bucket, path = self._split(key)
        return OssWriter(self.client, self.oss, bucket, path, hash_value)

    def put(self, key: str, data: bytes) -> None:
        """Write a small object."""
        bucket, path = self._split(key)
        self.client.put_object(self.oss.PutObjectRequest(bucket=bucket, key=path, body=data))

    def get(self, key: str) -> bytes | None:
        """A small object's bytes, or None."""
        if self.stat(key) is None:
            return None
        return b"".join(self.read(key, READ_CHUNK))

    def read(self, key: str, chunk: int) -> Iterator[bytes]:
        """An object's bytes in order."""
        bucket, path = self._split(key)
        r = self.client.get_object(self.oss.GetObjectRequest(bucket=bucket, key=path))
        yield from r.body.iter_bytes(block_size=chunk)

    def keys(self, prefix: str) -> list[str]:
        """Keys that start with ``prefix`` (``BUCKET/PATH``), every page."""
        bucket, path = self._split(prefix)
        out: list[str] = []
        paginator = self.client.list_objects_v2_paginator()
        for page in paginator.iter_page(self.oss.ListObjectsV2Request(bucket=bucket, prefix=path)):
            out += [f"{bucket}/{o.key}" for o in page.contents or []]
        return sorted(out)

    def delete(self, key: str) -> None:
        """Remove an object (OSS answers 204 for a key that does not exist)."""
        bucket, path = self._split(key)
        self.client.delete_object(self.oss.DeleteObjectRequest(bucket=bucket, key=path))


def _oss_credentials(oss: Any) -> Any:
    from alibabacloud_credentials.client import Client  # pyright: ignore[reportMissingImports]

    chain = Client()

    def get() -> Any:
        c = chain.get_credential()
        return oss.credentials.Credentials(access_key_id=c.access_key_id, access_key_secret=c.access_key_secret,
                                           security_token=c.security_token)

    return oss.credentials.CredentialsProviderFunc(get)
