"""The weight copy end to end on loopback: a generated model on a local Hub, copied into moto's S3 and Azurite's
Blob through the copier's one code path; resumed after a killed worker; a corrupted object detected and recopied;
a file whose bytes disagree with the Hub never committed; a grant still propagating (the store refuses the first
requests) waited out, and one that never comes reported. Small models (a few MiB): the big one is the benchmark's.
"""

import ast
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

import pytest

from k3infra.weightcopy import delivery
from k3infra.weightcopy.copier import access
from k3infra.weightcopy.copier.access import ACCESS_CHECK_KEY, AuthorizationError, check_access, is_authorization_error
from k3infra.weightcopy.copier.cli import main
from k3infra.weightcopy.copier.hashing import Hasher
from k3infra.weightcopy.copier.hub import hub_stream
from k3infra.weightcopy.copier.marker import marker_key, retire_markers, wait_for_marker
from k3infra.weightcopy.copier.oss_store import OssStore
from k3infra.weightcopy.copier.plan import Repo, RepoFile, assign, list_repo_files
from k3infra.weightcopy.copier.progress import Progress, ProgressWriter
from k3infra.weightcopy.copier.store import ObjectStat, ObjectStore
from k3infra.weightcopy.copier.stores import open_store
from k3infra.weightcopy.copier.sync import Report, Settings, sync
from k3infra.weightcopy.copier.transfer import CopyError, copy_file, parts
from k3infra.weightcopy.copier.verification import is_complete, verify
from tests.weightcopy.hub_server import COMMIT, Hub, generate
from tests.weightcopy.servers import (
    AZURE_PERMISSION_MISMATCH,
    OSS_ACCESS_DENIED,
    ROOT,
    S3_ACCESS_DENIED,
    S3_CREDENTIALS,
    RefusingProxy,
    blob_server,
    s3_server,
)

MiB = 2**20
PART = 5 * MiB
"""S3's smallest multipart part (moto enforces it)."""
REPO = "org/generated"
SHARDS = [11 * MiB, 6 * MiB, 5 * MiB, 2 * MiB]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hub") / "generated"
    generate(root, SHARDS, seed=7)
    return root


@pytest.fixture(scope="module")
def hub(model: Path) -> Iterator[Hub]:
    with Hub({REPO: model}) as h:
        old = os.environ.get("HF_ENDPOINT")
        os.environ["HF_ENDPOINT"] = h.endpoint
        _reload_hub_constants()
        yield h
        if old is None:
            os.environ.pop("HF_ENDPOINT", None)
        else:
            os.environ["HF_ENDPOINT"] = old
        _reload_hub_constants()


def _reload_hub_constants() -> None:
    """huggingface_hub reads HF_ENDPOINT when it is imported."""
    import huggingface_hub.constants as c

    c.ENDPOINT = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    c.HUGGINGFACE_CO_URL_TEMPLATE = c.ENDPOINT + "/{repo_id}/resolve/{revision}/{filename}"


@pytest.fixture(scope="module")
def s3() -> Iterator[Any]:
    with s3_server() as s:
        yield s


@pytest.fixture(scope="module")
def blob(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with blob_server(tmp_path_factory.mktemp("azurite")) as b:
        yield b


def listing(r: Repo) -> tuple[str, list[RepoFile]]:
    return list_repo_files(r.repo, r.revision, None)


def source(f: RepoFile, commit: str) -> Iterator[bytes]:
    return hub_stream(f, commit, None)


def run(repo: Repo, store: ObjectStore, **settings: Any) -> Report:
    s = Settings(**{"part_size": PART, "streams": 2, **settings})
    return sync([repo], store, s, listing=listing, source=source, log=lambda _: None)


def names(model: Path) -> list[str]:
    return sorted(str(p.relative_to(model)) for p in model.rglob("*") if p.is_file())


# ---------------------------------------------------------------------------------------------------------------
# Pure parts


def test_files_are_assigned_deterministically_balanced_by_size_largest_first() -> None:
    files = [RepoFile("r", f"f{i}", size, "0" * 64, "0" * 40) for i, size in
             enumerate([100, 90, 80, 70, 60, 50, 1, 1])]
    shards = assign(files, 3)
    assert [[f.path for f in s] for s in shards] == [["f0", "f5", "f6"], ["f1", "f4", "f7"], ["f2", "f3"]]
    assert [sum(f.size for f in s) for s in shards] == [151, 151, 150]
    assert assign(list(reversed(files)), 3) == shards
    assert sorted(f.path for s in assign(files, 5) for f in s) == sorted(f.path for f in files)


def test_parts_regroup_any_chunking_into_whole_parts() -> None:
    chunks = [b"a" * 3, b"b" * 10, b"c" * 1, b"d" * 7]
    assert [len(p) for p in parts(chunks, 5)] == [5, 5, 5, 5, 1]
    assert b"".join(parts(chunks, 5)) == b"".join(chunks)


def test_git_files_are_checked_against_their_blob_id() -> None:
    data = b'{"a": 1}'
    import hashlib

    f = RepoFile("r", "config.json", len(data), None, hashlib.sha1(b"blob 8\0" + data).hexdigest())
    h = Hasher(f)
    h.update(data)
    assert h.value() == f.expected_hash == "gitsha1:" + f.git_oid


def test_repo_spec_and_marker_keys() -> None:
    r = Repo.parse("moonshotai/Kimi-K3@refs/pr/1=gs://b/models/moonshotai/Kimi-K3/")
    assert (r.repo, r.revision, r.dest) == ("moonshotai/Kimi-K3", "refs/pr/1", "gs://b/models/moonshotai/Kimi-K3")
    assert marker_key(r.revision) == ".k3infra/complete-refs_pr_1.json"
    with pytest.raises(Exception, match="REPO@REVISION"):
        Repo.parse("moonshotai/Kimi-K3=gs://b")


# ---------------------------------------------------------------------------------------------------------------
# End to end, one code path, two stores


@pytest.mark.parametrize("store_name", ["s3", "az"])
def test_copy_verifies_every_object_then_marks_the_revision_complete(store_name: str, hub: Hub, model: Path,
                                                                       request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue("s3" if store_name == "s3" else "blob")
    bucket = server.bucket()
    store = open_store(store_name, server.options())
    repo = Repo.parse(f"{REPO}@main={store_name}://{bucket}/models/{REPO}")
    root = f"{bucket}/models/{REPO}"

    assert not wait_for_marker(store, repo, timeout=0, interval=0, log=lambda _: None)
    first = run(repo, store, workers=2, index=0)
    second = run(repo, store, workers=2, index=1)
    # Disjoint shards that together hold every file; only the worker that finished last saw it complete.
    assert sorted(first.copied + second.copied) == [f"{REPO}/{n}" for n in names(model)]
    assert not set(first.copied) & set(second.copied)
    assert (first.completed, second.completed) == ([], [REPO])
    assert first.bytes_copied + second.bytes_copied == sum((model / n).stat().st_size for n in names(model))

    for n in names(model):
        assert b"".join(store.read(f"{root}/{n}", MiB)) == (model / n).read_bytes(), n
    _, files = listing(repo)
    assert verify(repo, store, files, deep=True) == {}
    shard = next(f for f in files if f.path.endswith("00001-of-00004.safetensors"))
    assert store.stat(f"{root}/{shard.path}") == ObjectStat(shard.size, f"sha256:{shard.sha256}")

    marker = json.loads(store.get(f"{root}/.k3infra/complete-main.json") or b"")
    manifest = json.loads(store.get(f"{root}/.k3infra/manifest-main.json") or b"")
    assert marker["commit"] == manifest["commit"] == COMMIT
    assert [f["path"] for f in manifest["files"]] == names(model)
    assert manifest["totalBytes"] == sum(f.size for f in files)
    assert wait_for_marker(store, repo, timeout=0, interval=0, log=lambda _: None)

    again = run(repo, store)
    assert (again.copied, again.bytes_copied, again.completed) == ([], 0, [REPO])
    assert again.skipped == [f"{REPO}/{n}" for n in names(model)]


@pytest.mark.parametrize("store_name", ["s3", "az"])
def test_a_copy_that_changes_a_model_directory_first_retires_every_marker_in_it(
        store_name: str, hub: Hub, model: Path, request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue("s3" if store_name == "s3" else "blob")
    bucket = server.bucket()
    store = open_store(store_name, server.options())
    repo = Repo.parse(f"{REPO}@main={store_name}://{bucket}/models/{REPO}")
    root = f"{bucket}/models/{REPO}"
    run(repo, store)
    # An earlier revision's marker in the same directory, and a draft model's beside it (another directory).
    older, beside = f"{root}/{marker_key('0' * 40)}", f"{bucket}/models/org/draft/{marker_key('main')}"
    store.put(older, b"{}")
    store.put(beside, b"{}")
    assert run(repo, store).copied == [] and store.get(older) is not None, "nothing written: nothing retired"

    retired: list[str] = []
    store.delete(f"{root}/{names(model)[0]}")
    seen = sync([repo], store, Settings(part_size=PART), listing=listing, source=source,  # pyright: ignore
                log=lambda line: retired.append(line) if line.startswith("retired ") else None)
    assert seen.copied == [f"{REPO}/{names(model)[0]}"] and seen.completed == [REPO]
    assert sorted(retired) == [f"retired {root}/{marker_key(r)}: {REPO} is about to change under it"
                               for r in ("0" * 40, "main")]
    assert store.get(older) is None and store.get(beside) == b"{}"
    assert store.keys(f"{root}/.k3infra/complete-") == [f"{root}/{marker_key('main')}"]  # written anew at the end


def test_a_corrupted_object_is_detected_and_recopied(hub: Hub, model: Path, s3: Any) -> None:
    import boto3

    bucket = s3.bucket()
    store = open_store("s3", s3.options())
    repo = Repo.parse(f"{REPO}@main=s3://{bucket}/models/{REPO}")
    run(repo, store)
    client = boto3.client("s3", endpoint_url=s3.endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    shard = "model-00002-of-00004.safetensors"
    key = f"models/{REPO}/{shard}"
    size = (model / shard).stat().st_size

    # An out-of-band write of the same size (the hash metadata goes with it): the plain check sees it.
    client.put_object(Bucket=bucket, Key=key, Body=b"\0" * size)
    redo = run(repo, store)
    assert redo.copied == [f"{REPO}/{shard}"] and len(redo.skipped) == len(names(model)) - 1

    # Bit rot under intact metadata: only the deep check rereads the bytes; it finds and recopies them.
    meta = client.head_object(Bucket=bucket, Key=key)["Metadata"]
    client.put_object(Bucket=bucket, Key=key, Body=b"\1" * size, Metadata=meta)
    _, files = listing(repo)
    assert verify(repo, store, files, deep=False) == {}
    assert list(verify(repo, store, files, deep=True)) == [shard]
    assert run(repo, store).copied == []
    assert run(repo, store, deep=True).copied == [f"{REPO}/{shard}"]
    assert verify(repo, store, files, deep=True) == {}


def test_bytes_that_disagree_with_the_hub_are_never_committed(hub: Hub, model: Path, s3: Any) -> None:
    bucket = s3.bucket()
    store = open_store("s3", s3.options())
    repo = Repo.parse(f"{REPO}@main=s3://{bucket}/models/{REPO}")
    shard = "model-00001-of-00004.safetensors"

    def tampered(f: RepoFile, commit: str) -> Iterator[bytes]:
        for i, chunk in enumerate(source(f, commit)):
            yield chunk[:-1] + b"X" if f.path == shard and i == 0 else chunk

    report = sync([repo], store, Settings(part_size=PART), listing=listing, source=tampered,
                         log=lambda _: None)
    assert list(report.failed) == [f"{REPO}/{shard}"] and "the Hub states" in report.failed[f"{REPO}/{shard}"]
    assert store.stat(f"{bucket}/models/{REPO}/{shard}") is None
    assert report.completed == [] and store.get(f"{bucket}/models/{REPO}/.k3infra/complete-main.json") is None
    progress = json.loads(store.get(f"{bucket}/models/{REPO}/.k3infra/progress-main-worker-0.json") or b"")
    assert (progress["state"], progress["filesFailed"], progress["bytesInFlight"]) == ("failed", 1, 0)
    assert progress["filesDone"] == progress["filesTotal"] - 1
    import boto3

    client = boto3.client("s3", endpoint_url=s3.endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


class RecordingStore:
    """A store that keeps every progress object written through it, with when (monotonic seconds)."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.progress: list[tuple[float, str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def put(self, key: str, data: bytes) -> None:
        if "/.k3infra/progress-" in key:
            self.progress.append((time.monotonic(), key, json.loads(data)))
        self.store.put(key, data)


PROGRESS_FIELDS = {"worker", "workers", "state", "bytesVerified", "bytesInFlight", "bytesTotal", "filesDone",
                   "filesFailed", "filesTotal", "bytesPerSecond", "rateWindowSeconds", "startedAt", "progressAt",
                   "updatedAt"}


def test_a_worker_publishes_its_progress_beside_the_marker_every_interval_and_once_at_its_end(
        hub: Hub, model: Path, s3: Any) -> None:
    bucket = s3.bucket()
    store = RecordingStore(open_store("s3", s3.options()))
    repo = Repo.parse(f"{REPO}@main=s3://{bucket}/models/{REPO}")
    total = sum((model / n).stat().st_size for n in names(model))

    def slow(f: RepoFile, commit: str) -> Iterator[bytes]:
        for chunk in source(f, commit):
            time.sleep(0.15)
            yield chunk

    started = time.monotonic()
    sync([repo], store, Settings(part_size=PART, streams=1, progress_interval=0.05),  # pyright: ignore
         listing=listing, source=slow, log=lambda _: None)
    elapsed = time.monotonic() - started
    key = f"{bucket}/models/{REPO}/.k3infra/progress-main-worker-0.json"
    assert {k for _, k, _ in store.progress} == {key}
    # Bounded: one write per interval while the worker runs, one at its start and one at its end.
    assert 3 <= len(store.progress) <= elapsed / 0.05 + 2
    docs = [d for _, _, d in store.progress]
    assert all(set(d) == PROGRESS_FIELDS for d in docs)
    final = docs[-1]
    assert {k: final[k] for k in PROGRESS_FIELDS - {"bytesPerSecond", "startedAt", "progressAt", "updatedAt"}} == {
        "worker": 0, "workers": 1, "state": "done", "bytesVerified": total, "bytesInFlight": 0, "bytesTotal": total,
        "filesDone": len(names(model)), "filesFailed": 0, "filesTotal": len(names(model)), "rateWindowSeconds": 60}
    assert json.loads(store.get(key) or b"") == final
    # The run is shorter than the rate's window: the rate is the whole run's.
    assert total / elapsed / 2 < final["bytesPerSecond"] < total / elapsed * 2, (final, elapsed)
    for d in docs:
        for t in ("startedAt", "progressAt", "updatedAt"):
            assert datetime.fromisoformat(d[t].replace("Z", "+00:00")).tzinfo is not None
    during = [d for d in docs[:-1] if 0 < d["bytesVerified"] + d["bytesInFlight"] < total]
    assert during and all(d["state"] == "copying" for d in during)
    assert [d["bytesVerified"] for d in docs] == sorted(d["bytesVerified"] for d in docs)
    assert any(d["bytesInFlight"] > 0 for d in during), "parts in flight count before their file is verified"

    # A rerun finds everything in: all verified at once, nothing streamed.
    again = RecordingStore(store.store)
    sync([repo], again, Settings(part_size=PART), listing=listing, source=source,  # pyright: ignore[reportArgumentType]
         log=lambda _: None)
    last = again.progress[-1][2]
    assert (last["state"], last["bytesVerified"], last["filesDone"], last["bytesPerSecond"]) == (
        "done", total, len(names(model)), 0.0)


class MemoryStore:
    """Objects in a dict: ``put`` and ``get``, all a progress writer uses."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def put(self, key: str, data: bytes) -> None:
        self.objects[key] = data

    def get(self, key: str) -> bytes | None:
        return self.objects.get(key)


def test_a_worker_that_ends_on_an_error_of_its_own_reports_failed_not_done() -> None:
    store = MemoryStore()
    f = RepoFile("r", "w.safetensors", 10, "0" * 64, "0" * 40)
    progress = Progress(0, 1, [f])
    with pytest.raises(KeyboardInterrupt):
        with ProgressWriter(store, "b/m/p.json", progress, 3600, log=lambda _: None):  # pyright: ignore
            assert json.loads(store.objects["b/m/p.json"])["state"] == "copying"
            raise KeyboardInterrupt
    assert json.loads(store.objects["b/m/p.json"])["state"] == "failed"
    with ProgressWriter(store, "b/m/p.json", progress, 3600, log=lambda _: None):  # pyright: ignore
        progress.verified(f, 0)
    assert json.loads(store.objects["b/m/p.json"])["state"] == "done"


def shipped(root: Path) -> Path:
    """The copier as its pods see it: the ConfigMap's keys as files under the mount of its package directory (the
    container's ``PYTHONPATH``, and its command's ``python -m``)."""
    package = root / delivery.PACKAGE
    package.mkdir(parents=True)
    for name, text in delivery.modules().items():
        (package / name).write_text(text)
    return root


def test_the_shipped_copier_imports_nothing_of_k3infra_and_every_module_ships() -> None:
    shipped_names = set(delivery.modules())
    assert shipped_names == {p.name for p in (ROOT / "k3infra/weightcopy/copier").glob("*.py")}
    assert {"__init__.py", "__main__.py", "cli.py", "sync.py"} <= shipped_names
    for name, text in delivery.modules().items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 1 or not (node.module or "").startswith("k3infra"), (name, node.module)
                assert node.level <= 1, (name, node.module)  # nothing above the package
            elif isinstance(node, ast.Import):
                assert not [a.name for a in node.names if a.name.startswith("k3infra")], name


def test_a_worker_killed_mid_copy_is_resumed_by_a_rerun_that_copies_only_the_rest(hub: Hub, model: Path,
                                                                                   s3: Any, tmp_path: Path) -> None:
    # ``hub`` points this process's listing at the local Hub (the killed worker streams from a slow one of its own):
    # without it the test passed only after another test of this module had set the endpoint. The worker runs the
    # copier as shipped (its ConfigMap's files, ``python -m copier``), from a directory outside the repository.
    bucket = s3.bucket()
    store = open_store("s3", s3.options())
    dest = f"s3://{bucket}/models/{REPO}"
    root = f"{bucket}/models/{REPO}"
    with Hub({REPO: model}, rate=24 * MiB) as slow:
        env = {**os.environ, **S3_CREDENTIALS, "HF_ENDPOINT": slow.endpoint,
               "K3_COPY_STORAGE_OPTIONS": json.dumps(s3.options()), "PYTHONPATH": str(shipped(tmp_path / "opt"))}
        worker = subprocess.Popen(
            [sys.executable, "-m", delivery.PACKAGE, "sync", "--repo", f"{REPO}@main={dest}",
             "--streams", "1", "--part-size", "5MiB"], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        _, files = list_repo_files(REPO, "main", None)
        deadline = time.monotonic() + 60
        done: list[str] = []
        while time.monotonic() < deadline and not done:
            done = [f.path for f in files if is_complete(store.stat(f"{root}/{f.path}"), f)]
            time.sleep(0.02)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
        assert worker.returncode == -signal.SIGKILL, worker.stderr.read() if worker.stderr else ""
    done = sorted(f.path for f in files if is_complete(store.stat(f"{root}/{f.path}"), f))
    assert 0 < len(done) < len(files), done
    assert store.get(f"{root}/.k3infra/complete-main.json") is None

    rerun = run(Repo.parse(f"{REPO}@main={dest}"), store)
    assert rerun.skipped == [f"{REPO}/{p}" for p in done]
    assert rerun.copied == sorted(f"{REPO}/{f.path}" for f in files if f.path not in done)
    assert rerun.bytes_copied == sum(f.size for f in files if f.path not in done)
    assert rerun.completed == [REPO]


# ---------------------------------------------------------------------------------------------------------------
# OSS: the SDK's multipart calls, against a stand-in client (no OSS emulator runs here)


class _Sdk:
    """The request and model constructors of alibabacloud-oss-v2 the store uses, as plain records."""

    def __getattr__(self, name: str) -> Any:
        return lambda **kw: type(name, (), {**kw, "__repr__": lambda s: name})()


class _OssClient:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], tuple[bytes, dict[str, str]]] = {}
        self.uploads: dict[str, tuple[str, str, dict[str, str], dict[int, bytes]]] = {}

    def initiate_multipart_upload(self, r: Any) -> Any:
        uid = f"u{len(self.uploads)}"
        self.uploads[uid] = (r.bucket, r.key, dict(r.metadata), {})
        return type("R", (), {"upload_id": uid})()

    def upload_part(self, r: Any) -> Any:
        self.uploads[r.upload_id][3][r.part_number] = r.body
        return type("R", (), {"etag": f"e{r.part_number}"})()

    def complete_multipart_upload(self, r: Any) -> None:
        bucket, key, meta, parts = self.uploads.pop(r.upload_id)
        assert [p.part_number for p in r.complete_multipart_upload.parts] == sorted(parts)
        self.objects[(bucket, key)] = (b"".join(parts[n] for n in sorted(parts)), meta)

    def abort_multipart_upload(self, r: Any) -> None:
        self.uploads.pop(r.upload_id)

    def head_object(self, r: Any) -> Any:
        if (r.bucket, r.key) not in self.objects:
            raise RuntimeError("operation error HeadObject: StatusCode=404, ErrorCode=NoSuchKey")
        data, meta = self.objects[(r.bucket, r.key)]
        return type("R", (), {"content_length": len(data), "metadata": {k.capitalize(): v for k, v in meta.items()}})()

    def put_object(self, r: Any) -> None:
        self.objects[(r.bucket, r.key)] = (r.body, {})

    PAGE = 2
    """Keys per ListObjectsV2 page: small, so listing a few markers takes several pages."""

    def list_objects_v2_paginator(self) -> Any:
        from alibabacloud_oss_v2.paginator import ListObjectsV2Paginator

        return ListObjectsV2Paginator(self)  # the SDK's own paging over list_objects_v2

    def list_objects_v2(self, r: Any) -> Any:
        import alibabacloud_oss_v2 as oss

        keys = sorted(k for b, k in self.objects if b == r.bucket and k.startswith(r.prefix))
        start = int(getattr(r, "continuation_token", None) or 0)
        page = keys[start:start + self.PAGE]
        more = start + self.PAGE < len(keys)
        return oss.ListObjectsV2Result(contents=[oss.ObjectProperties(key=k) for k in page], is_truncated=more,
                                       next_continuation_token=str(start + self.PAGE) if more else None)

    def delete_object(self, r: Any) -> None:
        self.objects.pop((r.bucket, r.key), None)  # OSS answers 204 for a missing key too


def test_oss_lists_every_page_of_a_prefix_and_deletes_what_it_is_told() -> None:
    client = _OssClient()
    store = OssStore({"region": "ap-southeast-1"}, client=client, sdk=_Sdk())
    markers = [f"b/m/{marker_key(r)}" for r in ("a" * 40, "b" * 40, "c" * 40, "main", "v2")]
    for key in [*markers, "b/m/.k3infra/manifest-main.json", "b/m/w.safetensors", "b/other/.k3infra/complete-x.json"]:
        store.put(key, b"{}")
    assert store.keys("b/m/.k3infra/complete-") == sorted(markers)  # five keys over three pages of two
    assert retire_markers(store, "b/m") == sorted(markers)
    assert sorted(k for _, k in client.objects) == ["m/.k3infra/manifest-main.json", "m/w.safetensors",
                                                    "other/.k3infra/complete-x.json"]
    store.delete("b/m/gone.json")


def test_oss_objects_are_multipart_uploads_carrying_the_hash_and_aborted_when_wrong() -> None:
    client = _OssClient()
    store = OssStore({"region": "ap-southeast-1"}, client=client, sdk=_Sdk())
    import hashlib

    data = bytes(range(256)) * 4096
    f = RepoFile("r", "w.safetensors", len(data), hashlib.sha256(data).hexdigest(), "0" * 40)
    assert store.stat("b/m/w.safetensors") is None
    copy_file(f, [data[:300_000], data[300_000:]], store, "b/m/w.safetensors", 256 * 1024, 2)
    assert client.objects[("b", "m/w.safetensors")] == (data, {"k3sha256": f.expected_hash})
    assert is_complete(store.stat("b/m/w.safetensors"), f)
    with pytest.raises(CopyError):
        copy_file(f, [data[:-1] + b"x"], store, "b/m/other.safetensors", 256 * 1024, 2)
    assert client.uploads == {} and ("b", "m/other.safetensors") not in client.objects


# ---------------------------------------------------------------------------------------------------------------
# Authorization at start: a grant still propagating is waited out, one that never comes is reported


def _through(store_name: str, server: Any, endpoint: str) -> dict[str, Any]:
    """The copier's storage options for ``server`` reached through ``endpoint`` (the refusing proxy)."""
    if store_name == "s3":
        return {**server.options(), "endpoint_url": endpoint}
    return {"connection_string": server.connection_string.replace(f"http://127.0.0.1:{server.port}", endpoint)}


@pytest.fixture
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(access, "AUTH_BACKOFF_FIRST", 0.05)
    monkeypatch.setattr(access, "AUTH_BACKOFF_MAX", 0.2)


@pytest.mark.parametrize("store_name", ["s3", "az"])
def test_a_grant_still_propagating_is_retried_then_the_copy_runs(
        store_name: str, hub: Hub, model: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], fast_backoff: None) -> None:
    server = request.getfixturevalue("s3" if store_name == "s3" else "blob")
    bucket = server.bucket()
    dest = f"{store_name}://{bucket}/models/{REPO}"
    refusal = S3_ACCESS_DENIED if store_name == "s3" else AZURE_PERMISSION_MISMATCH
    with RefusingProxy(server.endpoint if store_name == "s3" else f"http://127.0.0.1:{server.port}", refusal, 3) as p:
        monkeypatch.setenv("K3_COPY_STORAGE_OPTIONS", json.dumps(_through(store_name, server, p.endpoint)))
        rc = main(["sync", "--repo", f"{REPO}@main={dest}", "--part-size", "5MiB", "--auth-window", "30"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert p.refused == 3 and err.count("a new grant may still be propagating") == 3, err
    assert "access to" in err and "granted after 3 refusal(s)" in err
    store = open_store(store_name, server.options())
    assert store.get(f"{bucket}/models/{REPO}/.k3infra/complete-main.json") is not None
    # The write check left one small object of its own next to the marker.
    assert store.stat(f"{bucket}/models/{REPO}/{ACCESS_CHECK_KEY}") is not None


@pytest.mark.parametrize("store_name,command", [("s3", "sync"), ("az", "sync"), ("s3", "wait"), ("oss", "wait")])
def test_a_refusal_that_outlasts_the_window_fails_saying_what_was_refused(
        store_name: str, command: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], fast_backoff: None) -> None:
    refusal = {"s3": S3_ACCESS_DENIED, "az": AZURE_PERMISSION_MISMATCH, "oss": OSS_ACCESS_DENIED}[store_name]
    with RefusingProxy(None, refusal, float("inf")) as p:
        if store_name == "oss":
            monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "testing")
            monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "testing")
            options: dict[str, Any] = {"region": "ap-southeast-1", "endpoint": p.endpoint}
        else:
            server = request.getfixturevalue("s3" if store_name == "s3" else "blob")
            options = _through(store_name, server, p.endpoint)
        monkeypatch.setenv("K3_COPY_STORAGE_OPTIONS", json.dumps(options))
        dest = f"{store_name}://k3-weights-refused/models/{REPO}"
        extra = ["--timeout", "5"] if command == "wait" else ["--part-size", "5MiB"]
        started = time.monotonic()
        # A window of several backoffs: on a loaded machine one SDK request can take a second or more, and the
        # test asserts that the copier retried, not how fast the machine is.
        rc = main([command, "--repo", f"{REPO}@main={dest}", "--auth-window", "5", *extra])
        elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert rc == 1, err
    assert 5 <= elapsed < 40, elapsed
    assert p.seen >= 3, "retried before giving up"
    what = "write to" if command == "sync" else "read"
    assert f"FAILED: this pod's identity may not {what} k3-weights-refused/models/{REPO}: still refused" in err, err
    # The first request is a HEAD (no body): S3 says only its status.
    assert {"s3": "PermissionError: Forbidden (403)", "az": "AuthorizationPermissionMismatch",
            "oss": "(AccessDenied)"}[store_name] in err, err
    assert "propagate" in err and "service account" in err


def test_an_error_that_is_not_authorization_is_not_waited_on(monkeypatch: pytest.MonkeyPatch,
                                                              fast_backoff: None) -> None:
    class Broken:
        calls = 0

        def stat(self, key: str) -> None:
            Broken.calls += 1
            raise ConnectionError("connection refused")

    with pytest.raises(ConnectionError):
        check_access(Broken(), ["b/m"], False, 30, log=lambda _: None)  # pyright: ignore[reportArgumentType]
    assert Broken.calls == 1


def test_authorization_errors_are_recognised_in_every_sdk_and_nothing_else_is() -> None:
    import botocore.exceptions as boto
    from alibabacloud_oss_v2 import exceptions as oss
    from azure.core import exceptions as azure
    from azure.identity import CredentialUnavailableError
    from s3fs.errors import translate_boto_error

    def client_error(code: str, status: int) -> Exception:
        return boto.ClientError({"Error": {"Code": code, "Message": code},
                                 "ResponseMetadata": {"HTTPStatusCode": status}}, "HeadObject")

    def oss_error(operation: str, status: int, code: str) -> Exception:
        fields = dict(message=code, request_id="K3TEST", ec="", timestamp="", request_target="")
        return oss.OperationError(name=operation, error=oss.ServiceError(status_code=status, code=code, **fields))

    class GcsHttpError(Exception):
        """gcsfs 2026.10.1 ``retry.HttpError``: a 401 keeps its status in ``code``."""

        def __init__(self, code: int) -> None:
            super().__init__(f"Invalid Credentials, {code}")
            self.code = code

    refused = [
        translate_boto_error(client_error("AccessDenied", 403)),  # s3fs: PermissionError
        client_error("403", 403),  # a HEAD has no body: botocore names the status
        boto.NoCredentialsError(),
        boto.CredentialRetrievalError(provider="container-role", error_msg="association not found"),
        azure.ClientAuthenticationError("AADSTS700213: No matching federated identity record found"),
        CredentialUnavailableError("WorkloadIdentityCredential authentication unavailable"),
        # gcsfs 2026.10.1 retry.validate_response: ``if status == 403: raise OSError(f"Forbidden: {path}\n{msg}")``
        OSError("Forbidden: b/models/x\nk3-weight-sync does not have storage.objects.create access"),
        GcsHttpError(401),
        oss_error("HeadObject", 403, "AccessDenied"),
        oss.CredentialsFetchError(error="AssumeRoleWithOIDC: EntityNotExist.Role"),
    ]
    for e in refused:
        assert is_authorization_error(e), repr(e)
    wrapped = RuntimeError("copy failed")
    wrapped.__cause__ = refused[0]
    assert is_authorization_error(wrapped)

    other = [
        FileNotFoundError("b/models/x"),
        translate_boto_error(client_error("NoSuchBucket", 404)),
        azure.ResourceNotFoundError("The specified blob does not exist."),
        oss_error("HeadObject", 404, "NoSuchKey"),
        oss_error("PutObject", 503, "ServiceUnavailable"),
        ConnectionError("connection reset"),
        OSError("Bad Request"),
        ValueError("invalid part size"),
    ]
    for e in other:
        assert not is_authorization_error(e), repr(e)


def test_the_window_runs_from_the_first_refusal_not_the_first_request() -> None:
    """Seen in CI on a loaded machine: the first request alone (the SDK's start included) outlasted a 5 s window, so
    the copier gave up after one refusal. The window now starts at the first refusal: a first request of 10 s on a
    fake clock still leaves the window's retries (2 s of backoff, the rest of the window, then a refusal past it)."""
    now = [0.0]

    class Slow:
        calls = 0

        def stat(self, key: str) -> None:
            Slow.calls += 1
            now[0] += 10.0 if Slow.calls == 1 else 0.1
            raise PermissionError("AccessDenied")

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(AuthorizationError, match="still refused"):
        check_access(Slow(), ["b/m"], False, 5, log=lambda _: None,  # pyright: ignore[reportArgumentType]
                     clock=lambda: now[0], sleep=sleep)
    assert Slow.calls >= 3
