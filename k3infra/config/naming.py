"""Name rules the clouds enforce, checked before anything reaches them."""

import ipaddress
import re

from ..catalog import Cloud


def bucket_name_problem(cloud: Cloud, name: str) -> str | None:
    """Why ``cloud`` would reject ``name`` as a bucket (Azure: blob container) name, or None."""
    if cloud == Cloud.GCP:
        # cloud.google.com/storage/docs/buckets#naming
        if not 3 <= len(name) <= 63:
            return "Cloud Storage bucket names are 3-63 characters"
        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*[a-z0-9]", name):
            return "Cloud Storage bucket names use lowercase letters, digits, -, _ and ., starting and ending with a letter or digit"
        if name.startswith("goog") or "google" in name or "g00gle" in name:
            return "Cloud Storage bucket names cannot start with goog or contain google"
        if _is_ip(name):
            return "Cloud Storage bucket names cannot be IP addresses"
        return None
    if cloud in (Cloud.AWS, Cloud.KUBERNETES):
        # docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html (MinIO and Ceph RGW follow them:
        # min.io/docs/minio/linux/administration/object-management.html, docs.ceph.com radosgw s3 bucket names)
        if not 3 <= len(name) <= 63:
            return "S3 bucket names are 3-63 characters"
        if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*[a-z0-9]", name):
            return "S3 bucket names use lowercase letters, digits, - and ., starting and ending with a letter or digit"
        if ".." in name or _is_ip(name):
            return "S3 bucket names cannot contain .. or be an IP address"
        if name.startswith(("xn--", "sthree-", "amzn-s3-demo-")) or name.endswith(("-s3alias", "--ol-s3", ".mrap", "--x-s3")):
            return "S3 reserves the prefixes xn--, sthree-, amzn-s3-demo- and the suffixes -s3alias, --ol-s3, .mrap, --x-s3"
        return None
    if cloud == Cloud.AZURE:
        # learn.microsoft.com/rest/api/storageservices/naming-and-referencing-containers--blobs--and-metadata
        if not 3 <= len(name) <= 63:
            return "blob container names are 3-63 characters"
        if not re.fullmatch(r"[a-z0-9](-?[a-z0-9])*", name):
            return "blob container names use lowercase letters, digits and single hyphens, starting and ending with a letter or digit"
        return None
    # Alibaba Cloud OSS: alibabacloud.com/help/oss/user-guide/bucket-naming-conventions
    if not 3 <= len(name) <= 63:
        return "OSS bucket names are 3-63 characters"
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*[a-z0-9]", name):
        return "OSS bucket names use lowercase letters, digits and -, starting and ending with a letter or digit"
    return None


def eas_service_name(stack: str) -> str:
    """The PAI-EAS service of a stack (``kimi_k3_<stack>``) as EAS takes it: lowercase letters, digits and
    underscores, at most 32 characters. The stack creates it by this name and ``k3infra status`` reads it."""
    name = re.sub(r"[^a-z0-9]+", "_", f"kimi_k3_{stack}".lower()).strip("_")
    return name[:32].rstrip("_")


def storage_account_problem(name: str) -> str | None:
    """Why Azure would reject ``name`` as a storage account name, or None."""
    if not re.fullmatch(r"[a-z0-9]{3,24}", name):
        return "storage account names are 3-24 lowercase letters and digits"
    return None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def zone_problem(cloud: Cloud, region: str, zone: str) -> str | None:
    """Why ``zone`` is not a zone of ``region`` on ``cloud``, or None."""
    if cloud == Cloud.AZURE:
        return None if zone in ("1", "2", "3") else "Azure availability zones are 1, 2 or 3"
    if cloud == Cloud.GCP:
        ok = re.fullmatch(re.escape(region) + r"-[a-z]", zone)
        return None if ok else f"Google Cloud zones of {region} are {region}-a, {region}-b, ..."
    if cloud == Cloud.KUBERNETES:
        return None  # a site name, for the plan only
    if cloud == Cloud.AWS:
        ok = re.fullmatch(re.escape(region) + r"[a-z](-[a-z0-9]+)?", zone)
        return None if ok else f"availability zones of {region} are {region}a, {region}b, ..."
    # cn-hangzhou-h, but ap-southeast-1a: a hyphen only after a letter.
    ok = re.fullmatch(re.escape(region) + r"-?[a-z]", zone)
    return None if ok else f"Alibaba Cloud zones of {region} are such as {region}{'' if region[-1].isdigit() else '-'}a"


def cidr_problem(cidr: str) -> str | None:
    """Why ``cidr`` is not a valid IPv4 network, or None."""
    try:
        ipaddress.IPv4Network(cidr, strict=True)
    except ValueError as e:
        return str(e)
    return None
