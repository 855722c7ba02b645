"""Kubernetes versions on Amazon EKS and SageMaker HyperPod: the support calendar and the defaults.

A minor version has 14 months of standard support on EKS, then 12 months of extended support at an extra cost
per cluster hour (USD 0.60 instead of 0.10), then an automatic upgrade. The calendar is stated as data so the
plan can say, on its own date, whether a version is still in standard support.

Sources: EKS User Guide, "Understand the Kubernetes version lifecycle on EKS" (kubernetes-versions.html,
section "Amazon EKS Kubernetes release calendar"), cross-checked with endoflife.date/amazon-eks (2026);
SageMaker developer guide, sagemaker-hyperpod-eks-prerequisites ("SageMaker HyperPod supports Kubernetes
versions 1.28, 1.29, 1.30, 1.31, 1.32, 1.33 and 1.34").
"""

from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class EksVersion:
    """One Kubernetes minor version on EKS."""

    version: str
    released: date
    """Available on EKS."""
    end_of_standard: date
    """Last day of standard support; extended support (extra cost) starts the day after."""
    end_of_extended: date


EKS_CALENDAR: dict[str, EksVersion] = {v.version: v for v in (
    EksVersion("1.28", date(2023, 9, 26), date(2024, 11, 26), date(2025, 11, 26)),
    EksVersion("1.29", date(2024, 1, 23), date(2025, 3, 23), date(2026, 3, 23)),
    EksVersion("1.30", date(2024, 5, 23), date(2025, 7, 23), date(2026, 7, 23)),
    EksVersion("1.31", date(2024, 9, 26), date(2025, 11, 26), date(2026, 11, 26)),
    EksVersion("1.32", date(2025, 1, 23), date(2026, 3, 23), date(2027, 3, 23)),
    EksVersion("1.33", date(2025, 5, 29), date(2026, 7, 29), date(2027, 7, 29)),
    EksVersion("1.34", date(2025, 10, 2), date(2026, 12, 2), date(2027, 12, 2)),
    EksVersion("1.35", date(2026, 1, 27), date(2027, 3, 27), date(2028, 3, 27)),
)}
"""The EKS release calendar, oldest first."""

HYPERPOD_KUBERNETES = ("1.28", "1.34")
"""Oldest and newest Kubernetes version SageMaker HyperPod supports on its EKS orchestrator."""

EKS_DEFAULT_KUBERNETES = "1.35"
"""The version an EKS stack's cluster runs when the stack names none: the newest on the calendar. Pinned, not
EKS's moving default, so that a later `pulumi up` never upgrades the control plane by itself."""

HYPERPOD_DEFAULT_KUBERNETES = HYPERPOD_KUBERNETES[1]
"""The version a HyperPod stack's cluster runs when the stack names none: the newest HyperPod supports."""


def minor(version: str) -> str:
    """``1.34.2`` or ``1.34-eks-13`` -> ``1.34``."""
    parts = version.split("-", 1)[0].split(".")
    return ".".join(parts[:2])


def key(version: str) -> tuple[int, int]:
    """A sortable (major, minor)."""
    major, _, rest = minor(version).partition(".")
    return int(major), int(rest or 0)


def standard_support_warning(version: str, today: date, *, setting: str) -> str | None:
    """Why ``version`` is a poor choice on ``today`` (out of standard support, or not on the calendar), or None.

    ``setting`` names the configuration key that chose it, for the message."""
    entry = EKS_CALENDAR.get(minor(version))
    newest = max(EKS_CALENDAR.values(), key=lambda v: key(v.version))
    if entry is None:
        return (f"Kubernetes {version} ({setting}) is not on k3infra's EKS calendar (1.28 to {newest.version}): its "
                "standard support is unchecked")
    if today <= entry.end_of_standard:
        return None
    current = [v.version for v in EKS_CALENDAR.values() if v.released <= today <= v.end_of_standard]
    extended = "in extended support (EKS bills USD 0.60 instead of 0.10 per cluster hour)" \
        if today <= entry.end_of_extended else "past extended support (EKS upgrades it automatically)"
    return (f"Kubernetes {version} ({setting}) left EKS standard support on {entry.end_of_standard.isoformat()} and is "
            f"{extended}; versions in standard support on {today.isoformat()}: "
            f"{', '.join(current) or 'none on the calendar'}")
