"""The HyperPod dependencies chart: where a checkout of aws/sagemaker-hyperpod-cli keeps it, the commit k3infra pins,
and the commit a checkout is at (read from its git directory, without running git)."""

from pathlib import Path

DEFAULT_DEPENDENCIES_CHART = "sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart"
"""Where ``git clone https://github.com/aws/sagemaker-hyperpod-cli`` puts the HyperPod dependencies chart
(health monitoring agent, deep health checks, device plugins); it is not published to a chart repository."""

DEPENDENCIES_CHART_COMMIT = "011ca927123e02b35a399935bbb3ab1905fe33c7"
"""The aws/sagemaker-hyperpod-cli commit whose ``helm_chart/HyperPodHelmChart`` k3infra installs (2026-06-22;
inference-operator chart 2.2.2). The chart's own version stays 0.1.0 across releases, so only the commit pins it:
check out this commit (``git -C sagemaker-hyperpod-cli checkout <commit>``); the stack checks the checkout."""

CHART_IN_REPOSITORY = Path("helm_chart/HyperPodHelmChart")
"""Where the chart lives in aws/sagemaker-hyperpod-cli."""


def chart_checkout_commit(chart_path: str) -> str | None:
    """The commit of the aws/sagemaker-hyperpod-cli checkout ``chart_path`` is in (its ``helm_chart/HyperPodHelmChart``),
    read from ``.git`` without running git; None when the path is missing, not at that place in a git work tree,
    or the checkout cannot be read."""
    here = Path(chart_path).resolve()
    if not here.is_dir() or here.parts[-len(CHART_IN_REPOSITORY.parts):] != CHART_IN_REPOSITORY.parts:
        return None
    root = here.parents[len(CHART_IN_REPOSITORY.parts) - 1]
    git = root / ".git"
    if git.is_file():  # a linked worktree or submodule: "gitdir: <path>"
        text = git.read_text(encoding="utf-8").strip()
        git = (root / text.removeprefix("gitdir:").strip()).resolve() if text.startswith("gitdir:") else git
    return _resolve_head(git) if git.is_dir() else None


def _resolve_head(git: Path) -> str | None:
    try:
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head or None
    ref = head.removeprefix("ref:").strip()
    common = git
    if (git / "commondir").is_file():  # a linked worktree keeps refs in the main repository
        common = (git / (git / "commondir").read_text(encoding="utf-8").strip()).resolve()
    for base in (git, common):
        loose = base / ref
        if loose.is_file():
            return loose.read_text(encoding="utf-8").strip()
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8").splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                return sha
    return None
