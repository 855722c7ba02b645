"""``weight-bucket-private-encrypted``: buckets cannot be read anonymously and are encrypted at rest.
"""

from typing import Any, Iterator, Mapping, Sequence

from .base import Resource, as_list, get


PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")


def _refers_to(r: Resource, bucket: Resource, *names: Any) -> bool:
    """A resource configures ``bucket``: it depends on it, or names it by one of its names."""
    target = get(r.props, "bucket") or get(r.props, "accountName")
    return bucket.urn in r.dependencies or (target is not None and target in [n for n in names if n])


def check_buckets(resources: Sequence[Resource], _config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``weight-bucket-private-encrypted``."""
    by_type: dict[str, list[Resource]] = {}
    for r in resources:
        by_type.setdefault(r.type, []).append(r)

    def related(kind: str, bucket: Resource, *names: Any) -> list[Resource]:
        return [x for x in by_type.get(kind, []) if _refers_to(x, bucket, *names)]

    for b in by_type.get("gcp:storage/bucket:Bucket", []):
        if get(b.props, "publicAccessPrevention") != "enforced":
            yield (f"GCS bucket {b.name}: set publicAccessPrevention \"enforced\" (given: "
                   f"{get(b.props, 'publicAccessPrevention') or 'inherited'})"), b.urn
        if get(b.props, "uniformBucketLevelAccess") is not True:
            yield f"GCS bucket {b.name}: set uniformBucketLevelAccess true (no per-object ACLs)", b.urn
        for kind in ("gcp:storage/bucketIAMMember:BucketIAMMember", "gcp:storage/bucketIAMBinding:BucketIAMBinding"):
            for m in related(kind, b, get(b.props, "name")):
                members = [get(m.props, "member")] + as_list(get(m.props, "members"))
                public = [x for x in members if x in PUBLIC_MEMBERS]
                if public:
                    yield f"GCS bucket {b.name}: {m.name} grants {get(m.props, 'role')} to {public[0]}", m.urn
        # GCS encrypts every object at rest (Google-managed keys unless encryption.defaultKmsKeyName is set)

    for kind in ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"):
        for b in by_type.get(kind, []):
            names = (get(b.props, "bucket"), get(b.props, "id"), b.name)
            if get(b.props, "acl") in ("public-read", "public-read-write", "authenticated-read"):
                yield f"S3 bucket {b.name}: acl {get(b.props, 'acl')} makes it readable by others", b.urn
            blocks = related("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", b, *names)
            flags = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
            if not blocks or not all(get(x.props, f) is True for x in blocks for f in flags):
                yield (f"S3 bucket {b.name}: add a BucketPublicAccessBlock with {', '.join(flags)} all true"), b.urn
            # S3 encrypts every new object (SSE-S3) since 2023-01-05; an explicit configuration must encrypt too
            for enc in related("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration", b, *names):
                algos = [get(rule, "applyServerSideEncryptionByDefault.sseAlgorithm") for rule in as_list(get(enc.props, "rules"))]
                if not algos or not all(a in ("AES256", "aws:kms", "aws:kms:dsse") for a in algos):
                    yield f"S3 bucket {b.name}: {enc.name} sets no default encryption algorithm ({algos})", enc.urn

    for a in by_type.get("azure-native:storage:StorageAccount", []):
        if get(a.props, "allowBlobPublicAccess") is not False:
            yield f"storage account {a.name}: set allowBlobPublicAccess false", a.urn
        if get(a.props, "encryption.services.blob.enabled") is False:
            yield f"storage account {a.name}: blob encryption is disabled", a.urn
    for c in by_type.get("azure-native:storage:BlobContainer", []):
        if get(c.props, "publicAccess") not in (None, "None"):
            yield f"blob container {c.name}: publicAccess {get(c.props, 'publicAccess')} (must be None)", c.urn

    for b in by_type.get("alicloud:oss/bucket:Bucket", []):
        names = (get(b.props, "bucket"), get(b.props, "id"), b.name)
        acls = [get(b.props, "acl")] + [get(x.props, "acl") for x in related("alicloud:oss/bucketAcl:BucketAcl", b, *names)]
        public = [x for x in acls if x in ("public-read", "public-read-write")]
        if public:
            yield f"OSS bucket {b.name}: acl {public[0]} makes it readable by anyone", b.urn
        encrypted = get(b.props, "serverSideEncryptionRule.sseAlgorithm") in ("AES256", "KMS", "SM4") or any(
            get(x.props, "sseAlgorithm") in ("AES256", "KMS", "SM4")
            for x in related("alicloud:oss/bucketServerSideEncryption:BucketServerSideEncryption", b, *names))
        if not encrypted:
            yield (f"OSS bucket {b.name}: OSS does not encrypt by default; set serverSideEncryptionRule "
                   "(sseAlgorithm AES256 or KMS) or add a BucketServerSideEncryption"), b.urn
