"""The ``charts`` section: pinned charts taken from the user's mirror (an air-gapped cluster cannot reach ghcr.io or
registry.k8s.io), by chart name, each checked before any resource.

A mirror keeps the pin: k3infra still installs the catalog's version (catalog.charts ``MIRRORABLE_CHARTS``), which an
oci:// registry or an https repository must serve. Helm does not check the version of a local chart directory (Helm
v3.18.6, the library the toolchain's pulumi-kubernetes provider builds with: ``pkg/action/install.go``
``ChartPathOptions.LocateChart`` returns an existing path as it is, L752-762), so its
Chart.yaml is read here: its name and version must be the pin's, and every dependency it declares must be packed in
its ``charts/`` (``helm dependency build``), which the provider would otherwise refuse only at ``pulumi up``
(pulumi-kubernetes v4 ``provider/pkg/helm/tool.go``: ``action.CheckDependencies``, with dependency update off).
"""

import re
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..catalog.charts import MIRRORABLE_CHARTS, chart_name
from .problems import Problems
from .schema import K, is_given

OCI = re.compile(r"oci://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*/?")
"""An OCI registry path without a tag or digest (Helm appends the chart's name and ``:VERSION``)."""
HTTPS = re.compile(r"https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[^\s?#]*)?")
ALLOWED = "oci://HOST/PATH (no tag), https://HOST/PATH (a chart repository) or an absolute directory path"


def read_charts(v: dict[str, Any], p: Problems) -> dict[str, str]:
    """``charts.<name>.repository`` by chart name, for the names whose mirror passed its checks."""
    section = v.get("charts")
    out: dict[str, str] = {}
    if not isinstance(section, Mapping):
        return out
    for name, source in section.items():
        repository = source.get("repository") if isinstance(source, Mapping) else None
        if name not in MIRRORABLE_CHARTS or not is_given(repository) or not isinstance(repository, str):
            continue
        problems = mirror_problems(name, repository)
        for reason in problems:
            p.add(f"{K}charts.{name}.repository", reason, repository, ALLOWED)
        if not problems:
            out[name] = repository
    return out


def mirror_problems(name: str, repository: str) -> list[str]:
    """What is wrong with ``repository`` as the mirror of the pinned chart ``name``."""
    if repository.startswith("oci://"):
        if not OCI.fullmatch(repository):
            return ["is not an OCI registry path (lower-case path, no :tag or @digest: the pinned version is added)"]
        if chart_name(repository) == name:
            return [f"names the chart itself: give the path that holds it (the chart is REPOSITORY/{name})"]
        return []
    if repository.startswith("http://"):
        return ["is plain HTTP: a chart repository is read over https"]
    if repository.startswith("https://"):
        return [] if HTTPS.fullmatch(repository) else ["is not an https URL"]
    if repository.startswith("/"):
        return _directory_problems(name, MIRRORABLE_CHARTS[name][1], Path(repository))
    return ["is not a chart repository"]


def _directory_problems(name: str, version: str, root: Path) -> list[str]:
    """The local chart ``root/name``: its Chart.yaml names ``name`` at ``version`` and its dependencies are packed."""
    chart = root / name
    manifest = _chart_yaml(chart)
    if manifest is None:
        return [f"holds no chart {name}/ (no {chart}/Chart.yaml where `pulumi up` runs; `helm pull --untar -d` "
                "the pinned chart there)"]
    out: list[str] = []
    if manifest.get("name") != name:
        out.append(f"{chart}/Chart.yaml names {manifest.get('name')!r}, not {name!r}")
    if str(manifest.get("version")) != version:
        out.append(f"{chart}/Chart.yaml is version {manifest.get('version')!r}; the pinned version is {version!r} "
                   "(Helm does not check a local chart's version)")
    packed = _packed(chart / "charts")
    for dep in manifest.get("dependencies") or ():
        dep_name = dep.get("name") if isinstance(dep, Mapping) else None
        if dep_name and not any(n == dep_name or n.startswith(f"{dep_name}-") and n.endswith(".tgz") for n in packed):
            out.append(f"{chart}/Chart.yaml depends on {dep_name!r}, which {chart}/charts/ lacks (run `helm "
                       "dependency build` on it)")
    return out


def _chart_yaml(chart: Path) -> dict[str, Any] | None:
    try:
        doc = yaml.safe_load((chart / "Chart.yaml").read_text())
    except (OSError, yaml.YAMLError):
        return None
    return doc if isinstance(doc, dict) else None


def _packed(charts: Path) -> set[str]:
    """The subcharts in a chart's ``charts/``: an unpacked one by its Chart.yaml's name, an archive
    (``NAME-VERSION.tgz``) by its file name."""
    out: set[str] = set()
    for entry in sorted(charts.iterdir()) if charts.is_dir() else ():
        if entry.is_dir():
            sub = _chart_yaml(entry)
            if sub and isinstance(sub.get("name"), str):
                out.add(sub["name"])
        elif entry.name.endswith(".tgz"):
            out.add(entry.name)
    return out


__all__ = ["mirror_problems", "read_charts"]
