"""The GKE version a cluster is created at: read from the release channel in the region, meeting every floor.

GKE creates a cluster at the channel's default version unless ``min_master_version`` names another that the
channel offers. A machine type that needs a newer GKE than the channel's default (A4X Max: 1.34.3-gke.1318000 on
1.34, 1.35.0-gke.2745000 from 1.35, k3infra.catalog.gke) must ask for one, and only a version the channel still
offers is accepted: pinning the floor itself fails once GKE retires that patch. So, as cluster-toolkit's gke-cluster module does with
``google_container_engine_versions``, the program reads the channel's versions while it runs (at ``pulumi
preview``) and picks:

- the channel's default, when it meets every floor (nothing is pinned);
- else the channel's newest version, when it meets every floor;
- else nothing: preview fails, naming the channel, the region, what it offers and what is needed.

A version the stack sets (``cluster.kubernetesVersion``, checked against the floors before any resource) is
checked against the newest the channel offers.
"""

from dataclasses import dataclass
from typing import Sequence

import pulumi
import pulumi_gcp as gcp

from ..catalog.gke import GkeVersion, VersionFloor


class VersionUnavailable(pulumi.RunError):
    """The release channel offers no version the cluster may be created at. Raised while the program runs."""


@dataclass(frozen=True)
class MasterVersion:
    """What the cluster is created at."""

    min_master_version: str | None
    """``min_master_version``: None lets GKE use the channel's default."""
    chosen: bool
    """True when k3infra read the version from the channel: the next read may differ (the channel moves), so
    the cluster ignores ``min_master_version``'s drift; the first creation is all it decides."""
    note: str | None
    """What is worth saying about the choice, for the plan."""


def unmet(version: GkeVersion | None, floors: Sequence[VersionFloor]) -> VersionFloor | None:
    """The first of ``floors`` that ``version`` does not meet (every floor when there is no version), or None."""
    return next((f for f in floors if version is None or not f.admits(version)), None)


def master_version(*, project: str | None, location: str, channel: str, given: str | None,
                   floors: Sequence[VersionFloor], opts: pulumi.InvokeOptions | None = None) -> MasterVersion:
    """Pick the version to create the cluster at (module docstring); raise :class:`VersionUnavailable`."""
    if given is None and not floors:
        return MasterVersion(None, chosen=False, note=None)
    offered = gcp.container.get_engine_versions(location=location, project=project, opts=opts)
    default = GkeVersion.parse((offered.release_channel_default_version or {}).get(channel) or "")
    latest_text = (offered.release_channel_latest_version or {}).get(channel) or ""
    latest = GkeVersion.parse(latest_text)
    where = f"the {channel} channel in {location}"
    if given is not None:
        wanted = GkeVersion.parse(given)
        if latest is not None and wanted is not None and latest.lowest < wanted.lowest:
            raise VersionUnavailable(f"cluster.kubernetesVersion {given}: {where} offers at most {latest}; choose a "
                                     "version it offers or a faster channel (gcp.releaseChannel)")
        return MasterVersion(given, chosen=False, note=None)
    below = unmet(default, floors)
    if below is None:
        return MasterVersion(None, chosen=True, note=None)
    if unmet(latest, floors) is None:
        return MasterVersion(latest_text, chosen=True,
                             note=f"{where} defaults to {default or 'no version'}, too old ({below.why}): the "
                                  f"cluster is created at the channel's newest, {latest}")
    below = unmet(latest, floors) or below
    raise VersionUnavailable(f"{below.why}, and {where} offers at most {latest or 'nothing'}: choose a faster "
                             "channel (gcp.releaseChannel RAPID) or wait until the channel reaches it")
