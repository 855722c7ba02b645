"""Issue 40 in the copier: the weights kept on a GPU node (``node``) and the engine's caches carried through the
bucket (``caches``, ``agent``), against the local object stores the copier's own tests start (moto's S3 server,
Azurite) and the OSS stand-in client: a copy verified against the bucket's manifest, a server's choice that falls back
to the bucket on any mismatch, a corrupt cache and a mismatched one ignored, never fatal."""

import hashlib
import io
import json
import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from k3infra.weightcopy.copier.agent import Agent, run as run_agent
from k3infra.weightcopy.copier.caches import WARM_FLAG, cache_key, restore_cache, save_cache, warm_flag_text
from k3infra.weightcopy.copier.cli import main
from k3infra.weightcopy.copier.marker import manifest_key, marker_key
from k3infra.weightcopy.copier import node as node_module
from k3infra.weightcopy.copier.node import KEEP_FREE, choose, node_copy, node_root
from k3infra.weightcopy.copier.oss_store import OssStore
from k3infra.weightcopy.copier.plan import Repo
from k3infra.weightcopy.copier.store import ObjectStore
from k3infra.weightcopy.copier.stores import open_store
from tests.weightcopy.test_copier import (  # noqa: F401 - the module's fixtures, by name
    REPO,
    _OssClient,
    _Sdk,
    blob,
    hub,
    model,
    names,
    run,
    s3,
)

PARTS = {"engine": "vllm-0.33.0", "image": "vllm/vllm-openai:kimi-k3", "gpu": "GB300", "layout": "tp8-pp1-nodes2"}
QUIET = lambda _: None  # noqa: E731


@pytest.fixture(autouse=True)
def roomy_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The node directory's filesystem has room, whatever this machine's disk holds (one test shrinks it)."""
    monkeypatch.setattr(node_module, "disk_usage", lambda _: shutil._ntuple_diskusage(2**50, 0, 2**50))  # type: ignore[attr-defined]


def _synced(store_name: str, request: pytest.FixtureRequest) -> tuple[ObjectStore, Repo, str]:
    """A bucket holding the generated model, copied and marked complete by the copier."""
    server = request.getfixturevalue("s3" if store_name == "s3" else "blob")
    bucket = server.bucket()
    store = open_store(store_name, server.options())
    repo = Repo.parse(f"{REPO}@main={store_name}://{bucket}/models/{REPO}")
    run(repo, store)
    return store, repo, f"{bucket}/models/{REPO}"


@pytest.mark.parametrize("store_name", ["s3", "az"])
def test_the_node_copy_is_the_bucket_s_revision_and_a_server_chooses_it_until_the_bucket_moves_on(
        store_name: str, hub: Any, model: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store, repo, root = _synced(store_name, request)
    node = tmp_path / "node"
    assert choose(store, repo, node, QUIET) is None, "no copy yet: the bucket"
    assert node_copy(store, repo, node, QUIET)
    local = node_root(node, repo.dest)
    assert local == node / "weights" / "models" / REPO
    assert sorted(str(p.relative_to(local)) for p in local.rglob("*") if p.is_file() and ".k3infra" not in p.parts) \
        == names(model)
    for n in names(model):
        assert (local / n).read_bytes() == (model / n).read_bytes(), n
    assert (local / marker_key("main")).read_bytes() == store.get(f"{root}/{marker_key('main')}")
    assert choose(store, repo, node, QUIET) == str(local)

    # a file truncated on the node: the bucket, and the agent's next round copies it again
    shard = local / names(model)[-1]
    shard.write_bytes(shard.read_bytes()[:-1])
    assert choose(store, repo, node, QUIET) is None
    assert node_copy(store, repo, node, QUIET) and choose(store, repo, node, QUIET) == str(local)

    # the bucket's revision moves on (a new marker): the node copy is no longer chosen until it is copied again
    marker = json.loads(store.get(f"{root}/{marker_key('main')}") or b"")
    store.put(f"{root}/{marker_key('main')}", json.dumps({**marker, "commit": "f" * 40}, sort_keys=True).encode())
    assert choose(store, repo, node, QUIET) is None
    assert node_copy(store, repo, node, QUIET) and choose(store, repo, node, QUIET) == str(local)


def _publish(store: ObjectStore, root: str, files: dict[str, bytes]) -> bytes:
    """A revision of ``main`` whose shards are ``files`` (same paths): the objects, the manifest, then the marker,
    as the copier writes them; the marker's bytes."""
    manifest = json.loads(store.get(f"{root}/{manifest_key('main')}") or b"")
    for entry in manifest["files"]:
        if entry["path"] in files:
            store.put(f"{root}/{entry['path']}", files[entry["path"]])
            entry["hash"] = "sha256:" + hashlib.sha256(files[entry["path"]]).hexdigest()
    body = json.dumps(manifest, indent=1, sort_keys=True).encode()
    store.put(f"{root}/{manifest_key('main')}", body)
    marker = json.loads(store.get(f"{root}/{marker_key('main')}") or b"")
    marker["manifestSha256"] = hashlib.sha256(body).hexdigest()
    out = json.dumps(marker, sort_keys=True).encode()
    store.put(f"{root}/{marker_key('main')}", out)
    return out


def test_a_revision_whose_shards_keep_their_sizes_and_a_return_to_the_old_one_are_copied_again(
        hub: Any, model: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Review of issue 40 (MAJOR 1): a copy that kept every file of the right size carried the old revision's bytes
    under the new marker, and a rollback found the old marker still on the node and served the newer bytes."""
    store, repo, root = _synced("s3", request)
    node = tmp_path / "node"
    local = node_root(node, repo.dest)
    victim = names(model)[-1]
    old = store.get(f"{root}/{victim}") or b""
    old_marker = store.get(f"{root}/{marker_key('main')}") or b""
    old_manifest = store.get(f"{root}/{manifest_key('main')}") or b""
    assert node_copy(store, repo, node, QUIET)

    new = bytes([old[0] ^ 1]) + old[1:]  # the same size, other bytes
    _publish(store, root, {victim: new})
    assert choose(store, repo, node, QUIET) is None
    assert node_copy(store, repo, node, QUIET)
    assert (local / victim).read_bytes() == new and choose(store, repo, node, QUIET) == str(local)
    assert sorted(p.name for p in (local / ".k3infra").glob("complete-*")) == ["complete-main.json"]

    # back to the first revision: its marker byte for byte, as a re-sync writes it
    store.put(f"{root}/{victim}", old)
    store.put(f"{root}/{manifest_key('main')}", old_manifest)
    store.put(f"{root}/{marker_key('main')}", old_marker)
    assert choose(store, repo, node, QUIET) is None
    assert node_copy(store, repo, node, QUIET)
    assert (local / victim).read_bytes() == old and choose(store, repo, node, QUIET) == str(local)


def test_files_the_revision_does_not_list_are_removed_once_it_is_complete(
        hub: Any, model: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store, repo, _ = _synced("s3", request)
    node = tmp_path / "node"
    local = node_root(node, repo.dest)
    (local / "old-revision").mkdir(parents=True)
    (local / "old-revision" / "model-00099.safetensors").write_bytes(b"x" * 10)
    (local / "cut-short.safetensors.partial").write_bytes(b"y")
    lines: list[str] = []
    assert node_copy(store, repo, node, lines.append)
    assert sorted(str(p.relative_to(local)) for p in local.rglob("*") if p.is_file() and ".k3infra" not in p.parts) \
        == names(model)
    assert lines[-1].endswith("; 2 file(s) of earlier revisions removed)")
    assert (local / ".k3infra" / "node-files.json").is_file()


def test_an_interrupted_copy_leaves_no_marker_and_no_file_the_record_vouches_for(
        hub: Any, model: Path, tmp_path: Path, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch) -> None:
    store, repo, root = _synced("s3", request)
    node = tmp_path / "node"
    local = node_root(node, repo.dest)
    assert node_copy(store, repo, node, QUIET)
    victim = names(model)[-1]
    old = store.get(f"{root}/{victim}") or b""
    _publish(store, root, {victim: bytes([old[0] ^ 1]) + old[1:]})

    def replaced_then_stopped(store_: Any, key: str, f: Any, target: Path) -> bool:
        target.write_bytes(store_.get(key))  # the new bytes in place, then the agent is killed
        raise KeyboardInterrupt
    monkeypatch.setattr(node_module, "_copy_file", replaced_then_stopped)
    with pytest.raises(KeyboardInterrupt):
        node_copy(store, repo, node, QUIET)
    assert not list((local / ".k3infra").glob("complete-*"))
    assert victim not in json.loads((local / node_module.NODE_FILES).read_bytes())
    assert choose(store, repo, node, QUIET) is None


def test_a_manifest_that_does_not_match_its_marker_is_never_copied_nor_chosen(
        hub: Any, model: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store, repo, root = _synced("s3", request)
    node = tmp_path / "node"
    assert node_copy(store, repo, node, QUIET)
    manifest = json.loads(store.get(f"{root}/{manifest_key('main')}") or b"")
    manifest["files"][0]["size"] += 1
    store.put(f"{root}/{manifest_key('main')}", json.dumps(manifest).encode())
    lines: list[str] = []
    assert choose(store, repo, node, lines.append) is None
    assert lines == [f"node copy of {repo.dest}: not the bucket's current revision; loading from the bucket"]
    assert not node_copy(store, repo, tmp_path / "other", QUIET)


def test_a_node_copy_that_would_leave_under_a_fifth_of_its_filesystem_free_is_not_started(
        hub: Any, model: Path, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hostPath on a node whose NVMe array is not mounted is on the boot disk: the copy must not fill it (the
    kubelet evicts below 10% nodefs / 15% imagefs free), and resumes once the filesystem has room."""
    store, repo, _ = _synced("s3", request)
    node = tmp_path / "node"
    size = sum((model / n).stat().st_size for n in names(model))
    seen: list[Path] = []

    def disk(total: int, free: int) -> None:
        def usage(path: Any) -> Any:
            seen.append(Path(path))
            return shutil._ntuple_diskusage(total, total - free, free)  # type: ignore[attr-defined]
        monkeypatch.setattr(node_module, "disk_usage", usage)

    # free space after the copy just under a fifth of the filesystem: nothing written, the bucket chosen
    total = 10 * size
    disk(total, size + int(KEEP_FREE * total) - 1)
    lines: list[str] = []
    assert not node_copy(store, repo, node, lines.append)
    assert seen == [tmp_path], "the nearest directory that exists: the hostPath's own filesystem"
    assert not node.exists() and choose(store, repo, node, QUIET) is None
    assert len(lines) == 1 and lines[0].startswith(f"node copy of {repo.dest}: {size} bytes to copy would leave ")
    assert lines[0].endswith("servers on this node load from the bucket")

    # exactly a fifth left: the copy runs (the agent's next round)
    disk(total, size + int(KEEP_FREE * total))
    assert node_copy(store, repo, node, QUIET) and choose(store, repo, node, QUIET) == str(node_root(node, repo.dest))


def test_a_file_whose_bytes_differ_from_the_manifest_is_not_kept(hub: Any, model: Path, tmp_path: Path,
                                                                 request: pytest.FixtureRequest) -> None:
    store, repo, root = _synced("s3", request)
    victim = names(model)[0]
    data = store.get(f"{root}/{victim}") or b""
    store.put(f"{root}/{victim}", bytes([data[0] ^ 1]) + data[1:])  # same size, other bytes
    lines: list[str] = []
    assert not node_copy(store, repo, tmp_path, lines.append)
    local = node_root(tmp_path, repo.dest)
    assert not (local / victim).exists() and not (local / f"{victim}.partial").exists()
    assert not (local / marker_key("main")).exists() and choose(store, repo, tmp_path, QUIET) is None
    assert lines == [f"node copy: 1 file(s) did not match the manifest: {victim}"]


def test_the_server_s_wait_writes_its_choice_for_the_engine(hub: Any, model: Path, tmp_path: Path,
                                                            request: pytest.FixtureRequest,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    store, repo, _ = _synced("s3", request)
    server = request.getfixturevalue("s3")
    monkeypatch.setenv("K3_COPY_STORAGE_OPTIONS", json.dumps(server.options()))
    choice = tmp_path / "choice"
    spec = f"{repo.repo}@{repo.revision}={repo.dest}"
    args = ["wait", "--repo", spec, "--timeout", "5", "--interval", "1", "--node-dir", str(tmp_path / "node"),
            "--choice-file", str(choice)]
    assert main(args) == 0 and choice.read_text() == ""
    assert node_copy(store, repo, tmp_path / "node", QUIET)
    assert main(args) == 0 and choice.read_text() == str(node_root(tmp_path / "node", repo.dest))


def test_the_server_pod_s_node_fill_copies_once_keeps_a_whole_copy_and_fails_on_a_mismatch(
        hub: Any, model: Path, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """HyperPod's init container (``node-fill``): the first start copies and verifies, a restart finds the copy, a
    bucket object that does not match its manifest fails the container (the engine never starts on a partial copy)."""
    store, repo, root = _synced("s3", request)
    monkeypatch.setenv("K3_COPY_STORAGE_OPTIONS", json.dumps(request.getfixturevalue("s3").options()))
    node = tmp_path / "node"
    args = ["node-fill", "--repo", f"{repo.repo}@{repo.revision}={repo.dest}", "--node-dir", str(node),
            "--timeout", "5", "--interval", "1"]
    assert main(args) == 0
    local = node_root(node, repo.dest)
    assert choose(store, repo, node, QUIET) == str(local)
    assert {n: (local / n).read_bytes() for n in names(model)} == {n: (model / n).read_bytes() for n in names(model)}
    before = {n: (local / n).stat().st_mtime_ns for n in names(model)}
    assert main(args) == 0 and {n: (local / n).stat().st_mtime_ns for n in names(model)} == before, "a restart copies nothing"

    victim = names(model)[0]
    (local / victim).unlink()
    data = store.get(f"{root}/{victim}") or b""
    store.put(f"{root}/{victim}", bytes([data[0] ^ 1]) + data[1:])
    assert main(args) == 1 and not (local / victim).exists() and choose(store, repo, node, QUIET) is None

    other = Repo.parse(f"{REPO}@other={repo.dest}")
    assert main(["node-fill", "--repo", f"{other.repo}@other={other.dest}", "--node-dir", str(node), "--timeout", "1",
                 "--interval", "1"]) == 1, "no marker of the revision: the wait times out"


def _cache(d: Path, warm: bool = True, rank: int = 0) -> None:
    """A node's cache directory after rank ``rank`` of a group warmed up (vLLM's per-rank compile directory, a JIT
    kernel every rank builds alike), marked warm by its server pod."""
    (d / "vllm" / "torch_compile_cache" / "abc" / f"rank_{rank}_0").mkdir(parents=True)
    (d / "vllm" / "torch_compile_cache" / "abc" / f"rank_{rank}_0" / "artifact").write_bytes(b"compiled%d" % rank * 1000)
    (d / "flashinfer").mkdir(exist_ok=True)
    (d / "flashinfer" / "kernel.so").write_bytes(bytes(range(256)))
    if warm:
        (d / WARM_FLAG).write_text(warm_flag_text(cache_key(PARTS), rank))


def _tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("store_name", ["s3", "az"])
def test_caches_saved_after_a_warm_up_are_restored_into_a_new_node(store_name: str, tmp_path: Path,
                                                                   request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue("s3" if store_name == "s3" else "blob")
    store = open_store(store_name, server.options())
    dest, key = f"{store_name}://{server.bucket()}/models/{REPO}", cache_key(PARTS)
    first, worker, new = tmp_path / "first", tmp_path / "worker", tmp_path / "new"
    _cache(first, warm=False)
    assert not save_cache(store, dest, key, PARTS, first, QUIET), "no served warm-up yet: nothing saved"
    other = {**PARTS, "image": "vllm/vllm-openai:v0.32.0"}
    (first / WARM_FLAG).write_text(warm_flag_text(cache_key(other), 0))
    assert not save_cache(store, dest, key, PARTS, first, QUIET), "a flag of another key (an older image's warm-up)"
    for bad in (key, f"{key} rank=-1", f"{key} rank=99999", f"{key}x rank=0"):
        (first / WARM_FLAG).write_text(bad)
        assert not save_cache(store, dest, key, PARTS, first, QUIET), bad
    (first / WARM_FLAG).write_text(warm_flag_text(key, 0))
    assert save_cache(store, dest, key, PARTS, first, QUIET)
    assert not [p for p in first.iterdir() if p.name.startswith(".k3infra-save")], "the staging directory is gone"
    _cache(worker, rank=1)
    assert save_cache(store, dest, key, PARTS, worker, QUIET)
    # a new node takes every rank's caches: whichever rank of a new group lands on it finds its own
    lines: list[str] = []
    assert restore_cache(store, dest, key, PARTS, new, lines.append) == "restored"
    assert _tree(new) == {k: v for k, v in {**_tree(first), **_tree(worker)}.items() if k != WARM_FLAG}
    assert sorted(p.name for p in (new / "vllm" / "torch_compile_cache" / "abc").iterdir()) == ["rank_0_0", "rank_1_0"]
    assert lines[-1].endswith("(rank-0, rank-1)")
    assert restore_cache(store, dest, key, PARTS, new, QUIET) == "kept", "a node's own caches stay"
    other = {**PARTS, "layout": "tp4-pp2-nodes2"}
    assert restore_cache(store, dest, cache_key(other), other, tmp_path / "x", QUIET) == "none"


def test_a_corrupt_cache_is_ignored_and_leaves_the_directory_empty(tmp_path: Path,
                                                                   request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue("s3")
    store = open_store("s3", server.options())
    bucket = server.bucket()
    dest, key = f"s3://{bucket}/models/{REPO}", cache_key(PARTS)
    _cache(tmp_path / "first")
    assert save_cache(store, dest, key, PARTS, tmp_path / "first", QUIET)
    record = json.loads(store.get(f"{bucket}/models/{REPO}/.k3infra/warm-caches/{key}/rank-0.json") or b"")
    archive = f"{bucket}/models/{REPO}/.k3infra/warm-caches/{key}/{record['archive']}"
    assert re.fullmatch(r"rank-0-[0-9a-f]{12}\.tar", record["archive"]) and record["rank"] == 0
    data = store.get(archive) or b""
    store.put(archive, data[:100] + bytes([data[100] ^ 1]) + data[101:])
    lines: list[str] = []
    got = restore_cache(store, dest, key, PARTS, tmp_path / "new", lines.append)
    assert got.startswith("ignored: the archive (") and "differs from its record" in got
    assert _tree(tmp_path / "new") == {} and lines == [f"warm caches of rank-0 ignored: {got[len('ignored: '):]}"]
    # another rank's good archive is still taken, the corrupt one left out
    _cache(tmp_path / "worker", rank=1)
    assert save_cache(store, dest, key, PARTS, tmp_path / "worker", QUIET)
    assert restore_cache(store, dest, key, PARTS, tmp_path / "new", QUIET) == "restored"
    assert _tree(tmp_path / "new") == {k: v for k, v in _tree(tmp_path / "worker").items() if k != WARM_FLAG}


def test_a_cache_whose_record_names_another_key_or_an_unsafe_member_is_ignored(tmp_path: Path,
                                                                              request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue("s3")
    store = open_store("s3", server.options())
    bucket = server.bucket()
    dest, key = f"s3://{bucket}/models/{REPO}", cache_key(PARTS)
    prefix = f"{bucket}/models/{REPO}/.k3infra/warm-caches/{key}/rank-0"
    store.put(f"{prefix}.json", json.dumps({"key": key, "parts": {**PARTS, "gpu": "B300"}, "rank": 0}).encode())
    assert restore_cache(store, dest, key, PARTS, tmp_path / "a", QUIET).startswith("ignored: the record names")
    store.put(f"{prefix}.json", json.dumps({"key": key, "parts": PARTS, "rank": 1}).encode())
    assert restore_cache(store, dest, key, PARTS, tmp_path / "a", QUIET).startswith("ignored: the record names")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("../escape")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    body = buf.getvalue()
    store.put(f"{prefix}-0123456789ab.tar", body)
    meta = {"key": key, "parts": PARTS, "rank": 0, "size": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    store.put(f"{prefix}.json", json.dumps({**meta, "archive": "rank-0-0123456789ab.tar"}).encode())
    got = restore_cache(store, dest, key, PARTS, tmp_path / "b", QUIET)
    assert got == "ignored: ValueError: member '../escape' is not a file or directory inside the cache"
    assert not (tmp_path / "escape").exists() and _tree(tmp_path / "b") == {}
    # a record naming an object outside its rank's archives (another rank's, or a path) is not followed
    for name in ("../../escape.tar", "rank-1-0123456789ab.tar", f"../{cache_key({**PARTS, 'gpu': 'B300'})}/x.tar"):
        store.put(f"{prefix}.json", json.dumps({**meta, "archive": name}).encode())
        got = restore_cache(store, dest, key, PARTS, tmp_path / "c", QUIET)
        assert got == f"ignored: the record names the archive {name!r}, not one of rank 0's"


class _OssWithReads(_OssClient):
    """The OSS stand-in with GetObject, which the caches and the node copy read through."""

    def get_object(self, r: Any) -> Any:
        data = self.objects[(r.bucket, r.key)][0]
        body = type("B", (), {"iter_bytes": lambda s, block_size: iter(
            [data[i:i + block_size] for i in range(0, len(data), block_size)])})()
        return type("R", (), {"body": body})()


def test_the_agent_carries_the_caches_through_oss_once_a_server_has_served(tmp_path: Path) -> None:
    store = OssStore({"region": "ap-southeast-1"}, client=_OssWithReads(), sdk=_Sdk())
    repo = Repo.parse(f"{REPO}@main=oss://k3-weights/models/{REPO}")
    key = cache_key(PARTS)
    served, fresh = tmp_path / "served", tmp_path / "fresh"
    lines: list[str] = []
    first = Agent(store, repo, node_dir=None, cache_root=str(served), caches=[PARTS], log=lines.append)
    run_agent(first, interval=0, rounds=1)
    assert (first.restored, first.saved) == ({key: "none"}, {key: False})
    _cache(served / key)
    run_agent(first, interval=0, rounds=2)
    assert first.saved == {key: True}
    assert lines[-1].startswith(f"warm caches of rank 0 saved as k3-weights/models/{REPO}/.k3infra/warm-")
    second = Agent(store, repo, node_dir=str(tmp_path / "node"), cache_root=str(fresh), caches=[PARTS],
                   log=lines.append)
    lines.clear()
    run_agent(second, interval=0, rounds=1)
    assert second.restored == {key: "restored"} and not second.copied  # no weights here: retried next round
    assert [ln.split(" ")[0:2] for ln in lines[:2]] == [["warm", "caches"], ["node", "copy:"]], \
        "the caches first: a fresh node has them before any server starts, the weights take the fill's hours"
    assert _tree(fresh / key) == {k: v for k, v in _tree(served / key).items() if k != WARM_FLAG}


def test_a_copy_cut_short_resumes_from_the_files_it_verified(
        hub: Any, model: Path, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review of issue 40 (HyperPod, MINOR 3): the record was written once all files were copied, so an init container
    killed mid-fill started again from nothing."""
    store, repo, _ = _synced("s3", request)
    node = tmp_path / "node"
    first, *rest = names(model)
    real = node_module._copy_file

    def stopped_after_the_first(store_: Any, key: str, f: Any, target: Path) -> bool:
        if f.path != first:
            raise KeyboardInterrupt
        return real(store_, key, f, target)
    monkeypatch.setattr(node_module, "_copy_file", stopped_after_the_first)
    with pytest.raises(KeyboardInterrupt):
        node_copy(store, repo, node, QUIET, files_in_flight=1)
    copied: list[str] = []

    def counting(store_: Any, key: str, f: Any, target: Path) -> bool:
        copied.append(f.path)
        return real(store_, key, f, target)
    monkeypatch.setattr(node_module, "_copy_file", counting)
    assert node_copy(store, repo, node, QUIET) and sorted(copied) == sorted(rest)
