"""Cloud-specific configuration rules, one module per cloud, run after the cloud-neutral checks.

Each module defines ``check(ctx, p, warnings)``. A rule that needs a value another check rejected sees
None for it and stays silent, so one mistake is reported once.
"""

from ...catalog import Cloud
from . import alicloud, aws, azure, gcp, kubernetes
from .common import Check

CHECKS: dict[Cloud, Check] = {Cloud.GCP: gcp.check, Cloud.AWS: aws.check, Cloud.AZURE: azure.check,
                              Cloud.ALICLOUD: alicloud.check, Cloud.KUBERNETES: kubernetes.check}
"""The check of each cloud."""
