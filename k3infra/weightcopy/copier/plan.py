"""What to copy: a revision's files with what the Hub states about them, and each worker's share of them."""

from __future__ import annotations

import argparse
import dataclasses
import re
from typing import Sequence


@dataclasses.dataclass(frozen=True)
class RepoFile:
    """One file of a Hub repository at a revision, with what the Hub states about it."""

    repo: str
    path: str
    size: int
    sha256: str | None
    """LFS sha256 (large files); None for files stored in git."""
    git_oid: str
    """Git blob id: for files in git, sha1 of ``blob SIZE\\0CONTENT``."""
    xet_hash: str | None = None

    @property
    def expected_hash(self) -> str:
        """The hash the copy checks: ``sha256:HEX`` for LFS files, ``gitsha1:HEX`` for the rest."""
        return f"sha256:{self.sha256}" if self.sha256 else f"gitsha1:{self.git_oid}"


@dataclasses.dataclass(frozen=True)
class Repo:
    """A repository to copy: Hub id, revision and destination URI (``SCHEME://BUCKET/PATH``)."""

    repo: str
    revision: str
    dest: str

    @staticmethod
    def parse(spec: str) -> "Repo":
        """``REPO@REVISION=DEST``."""
        m = re.fullmatch(r"([^@=\s]+)@([^=\s]+)=(\S+://\S+)", spec)
        if not m:
            raise argparse.ArgumentTypeError(f"{spec!r}: expected REPO@REVISION=SCHEME://BUCKET/PATH")
        return Repo(m.group(1), m.group(2), m.group(3).rstrip("/"))


def list_repo_files(repo: str, revision: str, token: str | None) -> tuple[str, list[RepoFile]]:
    """(commit sha, files) of ``repo`` at ``revision``, from the Hub's tree listing."""
    from huggingface_hub import HfApi  # pyright: ignore[reportMissingImports]
    from huggingface_hub.hf_api import RepoFile as HubFile  # pyright: ignore[reportMissingImports]

    api = HfApi(token=token)
    info = api.model_info(repo, revision=revision)
    commit = str(info.sha or revision)
    files = []
    for entry in api.list_repo_tree(repo, revision=commit, recursive=True):
        if not isinstance(entry, HubFile):
            continue  # a folder
        lfs = getattr(entry, "lfs", None)
        files.append(RepoFile(repo=repo, path=entry.path, size=int(entry.size), git_oid=entry.blob_id,
                              sha256=(lfs.sha256 if lfs is not None else None),
                              xet_hash=getattr(entry, "xet_hash", None)))
    return commit, sorted(files, key=lambda f: f.path)


def assign(files: Sequence[RepoFile], workers: int) -> list[list[RepoFile]]:
    """Files per worker, balanced by size: largest first, each to the worker with the fewest bytes so far (ties
    to the lowest index). Deterministic: every worker computes the same assignment from the same listing."""
    if workers < 1:
        raise ValueError("workers must be at least 1")
    shards: list[list[RepoFile]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for f in sorted(files, key=lambda f: (-f.size, f.repo, f.path)):
        i = min(range(workers), key=lambda w: (loads[w], w))
        shards[i].append(f)
        loads[i] += f.size
    return shards
