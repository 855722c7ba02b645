"""The GKE version a cluster is created at: read from the release channel in the region, at or above a floor.

GKE creates a cluster at the channel's default version unless ``min_master_version`` names another that the
channel offers. A machine type that needs a newer GKE than the channel's default (A4X Max: 1.34.3-gke.1318000,
k3infra.catalog.gke) must ask for one, and only a version the channel still offers is accepted: pinning the
floor itself fails once GKE retires that patch. So, as cluster-toolkit's gke-cluster module does with
``google_container_engine_versions``, the program reads the channel's versions while it runs (at ``pulumi
preview``) and picks:

- the channel's default, when it meets the floor (nothing is pinned);
- else the channel's newest version, when it meets the floor;
- else nothing: preview fails, naming the channel, the region, what it offers and what is needed.

A version the stack sets (``cluster.kubernetesVersion``, checked against the floor before any resource) is
checked against the newest the channel offers.
"""

from dataclasses import dataclass

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


def master_version(*, project: str | None, location: str, channel: str, given: str | None,
                   floor: VersionFloor | None, opts: pulumi.InvokeOptions | None = None) -> MasterVersion:
    """Pick the version to create the cluster at (module docstring); raise :class:`VersionUnavailable`."""
    if given is None and floor is None:
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
    assert floor is not None
    if default is not None and default.at_least(floor.version):
        return MasterVersion(None, chosen=True, note=None)
    if latest is not None and latest.at_least(floor.version):
        return MasterVersion(latest_text, chosen=True,
                             note=f"{where} defaults to {default or 'no version'}, older than {floor.version} "
                                  f"({floor.why}): the cluster is created at the channel's newest, {latest}")
    raise VersionUnavailable(f"{floor.why}, and {where} offers at most {latest or 'nothing'}: choose a faster "
                             "channel (gcp.releaseChannel RAPID) or wait until the channel reaches it")
