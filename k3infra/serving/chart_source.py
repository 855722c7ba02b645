"""Where a pinned chart is installed from: its upstream reference, or the stack's mirror of it
(``k3infra:charts.<name>.repository``, read and checked by config.charts).

A mirror holds the chart under its own name, at the pinned version: an ``oci://`` registry path (the chart is
``<repository>/<name>``, as ``helm push`` places it), an ``https://`` chart repository (``<name>`` from its
index.yaml) or a local directory where ``pulumi up`` runs (``<repository>/<name>``, as ``helm pull --untar -d``
leaves it). Helm ignores ``--version`` for a local chart (Helm v3.18.6 ``pkg/action/install.go``
``ChartPathOptions.LocateChart``: an existing path is returned as is), so config.charts checks that directory's
Chart.yaml against the pin before any resource; the version is still passed, so the plan states the pin.
"""

from typing import TypedDict

import pulumi_kubernetes as k8s

from ..catalog.charts import chart_name


class ChartLocation(TypedDict):
    """The ``chart``, ``version`` and ``repository_opts`` arguments of a ``helm.v4.Chart``."""

    chart: str
    """An oci:// reference, a chart name in ``repository_opts``' repository, or a local directory."""
    version: str
    """The pinned version."""
    repository_opts: k8s.helm.v4.RepositoryOptsArgs | None
    """The https chart repository of a mirror (``None``: the reference says where the chart is)."""


def chart_location(pinned: tuple[str, str], repository: str | None = None) -> ChartLocation:
    """The pinned chart ``(reference, version)``, from ``repository`` when the stack mirrors it."""
    chart, version = pinned
    if not repository:
        return ChartLocation(chart=chart, version=version, repository_opts=None)
    name = chart_name(chart)
    if repository.startswith("https://") or repository.startswith("http://"):
        return ChartLocation(chart=name, version=version,
                             repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=repository))
    return ChartLocation(chart=f"{repository.rstrip('/')}/{name}", version=version, repository_opts=None)


__all__ = ["ChartLocation", "chart_location"]
