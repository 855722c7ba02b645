"""What ships the copier to a pod: its source and its locked requirements, read from this package.

The sync Job (and the server's marker wait, where its loader does not mount the bucket) mount both from a
ConfigMap and run ``pip install --no-deps --require-hashes -r requirements.txt`` into /tmp before
``python copier.py``: every package is pinned with the hashes of its wheels and sdists (scripts/lock-weightcopy), so
nothing unpinned is downloaded at start.
"""

from importlib import resources

SCHEMES = ("s3", "gs", "az", "oss")
"""Bucket URI schemes the copier writes (one locked requirements file each)."""

IMAGE = "docker.io/library/python:3.12.11-slim-bookworm"
"""Image the copier runs in (amd64 and arm64; CPython 3.12, the version the requirements are locked for)."""

MOUNT = "/opt/k3copy"
"""Where the ConfigMap appears in the container."""

PACKAGES = "/tmp/k3copy-packages"
"""Where pip installs the locked requirements (the root file system is read-only)."""


def source() -> str:
    """The copier's source (k3infra/weightcopy/copier.py)."""
    return resources.files("k3infra.weightcopy").joinpath("copier.py").read_text()


def requirements(scheme: str) -> str:
    """The locked, hashed requirements of the copier for one bucket scheme."""
    if scheme not in SCHEMES:
        raise ValueError(f"no locked requirements for scheme {scheme!r} ({', '.join(SCHEMES)})")
    return resources.files("k3infra.weightcopy").joinpath("requirements", f"{scheme}.txt").read_text()


SCRIPT = ("set -eu\n"
          f"python -m pip install --quiet --no-cache-dir --disable-pip-version-check --no-deps --require-hashes "
          f"--target {PACKAGES} -r {MOUNT}/requirements.txt\n"
          f'PYTHONPATH={PACKAGES} exec python {MOUNT}/copier.py "$@"\n')
"""Install the locked requirements, then run the copier with the container's arguments."""

COMMAND = ("/bin/sh", "-c", SCRIPT, "copier")
"""The container command; the copier's arguments go in the container's ``args``."""
