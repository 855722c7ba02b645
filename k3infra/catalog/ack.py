"""The NVIDIA driver versions ACK installs on a GPU node pool through the ``ack.aliyun.com/nvidia-driver-version``
node-pool label.

Source: ACK, "List of NVIDIA driver versions supported by ACK" (alibabacloud.com/help/en/ack/ack-managed-and-ack-
dedicated/user-guide/ack-supported-nvidia-driver-version-list; the zh page node-nvidia-driver-version-list has the
same table), as published Feb-Mar 2026, row "1.28 and later". The page also says:

- "When you create a node pool, if the specified driver version is not listed [...], ACK automatically installs
  the default driver version": an unlisted version is silently replaced, so the pin does nothing.
- "If you specify a driver version that is incompatible with the latest OS, adding nodes may fail."
- "For ACK Lingjun clusters and Lingjun nodes in ACK managed Pro clusters, GPU drivers are built into the OS
  image. You cannot use node labels to install a specific GPU driver version."

The table changes as ACK adds drivers: when the page lists a newer version, add it here (one line).
"""

from dataclasses import dataclass

from .acr import AcrEdition

ACK_DRIVER_PAGE = ("https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/"
                   "ack-supported-nvidia-driver-version-list")


@dataclass(frozen=True)
class AckDriverTable:
    """The driver versions ACK installs by node-pool label, for one range of cluster versions."""

    cluster_versions: str
    """The page's row: the ACK cluster versions it applies to."""
    default: str
    """What ACK installs without a label, or for a version it does not list."""
    supported: tuple[str, ...]
    """Versions the label installs, newest first."""
    incompatible: tuple[str, ...]
    """Versions the page lists as incompatible with the latest OS images (adding nodes may fail)."""


ACK_NVIDIA_DRIVERS = AckDriverTable(
    cluster_versions="1.28 and later",
    default="535.161.07",
    supported=("570.169", "570.133.20", "550.163.01", "550.144.03", "550.90.07", "535.230.02", "535.161.07"),
    incompatible=("535.129.03", "525.147.05", "515.105.01", "510.108.03", "535.54.03", "525.105.17", "515.86.01",
                  "510.47.03", "470.161.03", "470.103.01", "470.82.01", "470.57.02", "460.91.03"),
)
"""ACK's driver table (row "1.28 and later"; ACK's default for ecs.gn9t/ebmgn9t is 570.169, not used by k3infra)."""

LINGJUN_DRIVER_NOTE = ("Lingjun nodes carry their GPU driver in the OS image, and ACK does not install a driver "
                       f"version from the node label on them ({ACK_DRIVER_PAGE})")
"""Why a Lingjun node pool takes no driver version."""


def ack_driver_problem(version: str) -> str | None:
    """Why ACK would not install ``version`` through the node-pool label, or None when it would."""
    t = ACK_NVIDIA_DRIVERS
    if version in t.supported:
        return None
    if version in t.incompatible:
        return (f"ACK lists NVIDIA driver {version} as incompatible with its latest OS images: new GPU nodes may "
                f"fail to join ({ACK_DRIVER_PAGE})")
    return (f"ACK does not list NVIDIA driver {version} for clusters {t.cluster_versions}, and installs its default "
            f"{t.default} instead of an unlisted version: the pin would do nothing ({ACK_DRIVER_PAGE})")


ACR_HELPER_PAGE = "https://www.alibabacloud.com/help/en/acr/user-guide/non-secret-pulling-container-image"
"""ACR/ACK, "Use the passwordless component to pull images from an ACR Enterprise Edition instance within the same
account" (the zh page non-secret-pulling-container-image has the same text)."""

ACR_HELPER_ADDON = "managed-aliyun-acr-credential-helper"
"""ACK's managed edition of the aliyun-acr-credential-helper add-on, the cluster add-on name InstallClusterAddons and
``cs.KubernetesAddon`` take. The page's card reads "aliyun-acr-credential-helper (Managed)": managed clusters (ACK Pro
is one) of Kubernetes 1.22 or later, "no self-management required"; the self-managed ``aliyun-acr-credential-helper``
is the other edition, and "only one edition can be installed at a time". The API name is that of public Terraform
configurations of alicloud_cs_kubernetes_addon and of a recorded InstallClusterAddons call that returned it
``active``; no Alibaba page names it (UNCONFIRMED)."""

ACR_HELPER_ROLE = "AliyunCSManagedAcrRole"
"""The RAM role the managed add-on pulls with, within the account: ACK's system role, authorized once per account in
the RAM console (the page's prerequisite); without it the add-on's precheck fails ("[Product Change] ...
aliyun-acr-credential-helper": clusters created since 2023-04-03 "cannot install or update" it). RRSA and the worker
role apply to pulls across accounts only ("Enable RRSA: not required for pulling images within the same account");
the worker role would hand every pod on the node the registry's token."""

ACR_HELPER_EDITIONS = frozenset({AcrEdition.ENTERPRISE, AcrEdition.PERSONAL_LEGACY})
"""The instances the add-on serves: "only ACR Enterprise Edition instances and ACR Personal Edition instances created
on or before September 8, 2024" (the page); a newer Personal instance takes imagePullSecrets only."""
