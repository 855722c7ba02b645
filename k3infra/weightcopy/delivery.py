"""What ships the copier to a pod: its package's modules and its locked requirements, read from this package.

The sync Job (and the server's marker wait, where its loader does not mount the bucket) mount one ConfigMap as the
copier's package directory: one key per module (ConfigMap keys cannot hold a ``/``, and the package is flat), and
the scheme's ``requirements.txt`` beside them. The container runs ``pip install --no-deps --require-hashes -r
requirements.txt`` into /tmp, then ``python -m copier``: every package is pinned with the hashes of its wheels and
sdists (scripts/lock-weightcopy), so nothing unpinned is downloaded at start.
"""

from importlib import resources

SCHEMES = ("s3", "gs", "az", "oss")
"""Bucket URI schemes the copier writes (one locked requirements file each)."""

IMAGE = "docker.io/library/python:3.12.11-slim-bookworm"
"""Image the copier runs in (amd64 and arm64; CPython 3.12, the version the requirements are locked for)."""

PACKAGE = "copier"
"""The copier's package (k3infra/weightcopy/copier): its name in the pod, where it is imported on its own."""

MOUNT = "/opt/k3copy"
"""The import root in the container; the ConfigMap appears at ``MOUNT/PACKAGE``."""

PACKAGES = "/tmp/k3copy-packages"
"""Where pip installs the locked requirements (the root file system is read-only)."""

REQUIREMENTS_KEY = "requirements.txt"
"""The ConfigMap key of the locked requirements (not a module name, so it never shadows one)."""


def modules() -> dict[str, str]:
    """The copier's modules (k3infra/weightcopy/copier/*.py), by file name: the ConfigMap's keys."""
    package = resources.files(f"k3infra.weightcopy.{PACKAGE}")
    return {f.name: f.read_text() for f in sorted(package.iterdir(), key=lambda f: f.name)
            if f.is_file() and f.name.endswith(".py")}


def requirements(scheme: str) -> str:
    """The locked, hashed requirements of the copier for one bucket scheme."""
    if scheme not in SCHEMES:
        raise ValueError(f"no locked requirements for scheme {scheme!r} ({', '.join(SCHEMES)})")
    return resources.files("k3infra.weightcopy").joinpath("requirements", f"{scheme}.txt").read_text()


SCRIPT = ("set -eu\n"
          f"python -m pip install --quiet --no-cache-dir --disable-pip-version-check --no-deps --require-hashes "
          f"--target {PACKAGES} -r {MOUNT}/{PACKAGE}/{REQUIREMENTS_KEY}\n"
          f'PYTHONPATH={MOUNT}:{PACKAGES} exec python -m {PACKAGE} "$@"\n')
"""Install the locked requirements, then run the copier with the container's arguments. The mount comes first on
the path, so no installed distribution can shadow the copier's package."""

COMMAND = ("/bin/sh", "-c", SCRIPT, "copier")
"""The container command; the copier's arguments go in the container's ``args``."""
