"""The fabric probe (k3infra/fabric_probe.py): its NCCL log parser on excerpts of each transport (nccl_logs/README.md
says where each format comes from), including a planted socket fallback, a planted multi-node NVLink fallback, GPUs of
one node over host memory and a planted low bandwidth; nccl-tests' bus bandwidth; and the script itself, run by
torch.distributed.run on CPU (gloo) as two "nodes" of two ranks, once passing and once under a planted expectation
it cannot reach."""

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from k3infra import fabric_probe as probe
from k3infra.serving import fabric_report
from tests.support import ROOT

LOGS = Path(__file__).parent / "nccl_logs"
ENGINES_PYTHON = ROOT / ".engines-venv" / "bin" / "python"


def path(expect: str, expected: float = 400.0, ranks: int = 16, collective: str = "all_reduce") -> probe.PathPlan:
    return probe.PathPlan("tensor-parallel", collective, tuple(range(ranks)), expect, expected, "the catalog",
                          "GpuPool.device_claims: the pool's RDMA NIC claim")


def facts(name: str) -> list[probe.LogFacts]:
    return [probe.parse_log((LOGS / name).read_text().splitlines())]


def test_the_parser_reads_the_transport_of_every_connection_and_the_network() -> None:
    a4 = facts("ib-a4.log")[0]
    assert a4.networks == {"gIB"} and not a4.nvls and not a4.no_ib_device
    assert len(a4.connections) == 36  # 2 channels x (14 inside the nodes + 2 across them, each logged on both ends)
    assert {c.via for c in a4.connections} == {"P2P/CUMEM/read", *{f"NET/gIB/{i}/GDRDMA" for i in (0, 7)}}
    assert {c.carrier for c in a4.connections} == {probe.NVLINK, probe.RDMA}
    efa = facts("efa-ofi.log")[0]
    assert (efa.networks, efa.providers) == ({"Libfabric"}, {"efa"})
    assert {c.carrier for c in efa.connections if c.via.startswith("NET/")} == {probe.RDMA}
    mnnvl = facts("mnnvl.log")[0]
    assert mnnvl.nvls and {c.via for c in mnnvl.connections} == {"P2P/MNNVL/read"}
    fallback = facts("socket-fallback.log")[0]
    assert fallback.no_ib_device and fallback.networks == {"Socket"}
    assert {c.carrier for c in fallback.connections} == {probe.NVLINK, probe.SOCKET}
    shm = facts("shm-inside.log")[0]
    assert {c.via for c in shm.connections if c.src // 8 == c.dst // 8} == {"SHM/direct"}


@pytest.mark.parametrize(("log", "expect", "ranks", "gpus", "between"), [
    ("ib-a4.log", probe.RDMA, 16, 8, ["NET/gIB/0/GDRDMA", "NET/gIB/7/GDRDMA"]),
    ("ib-native.log", probe.RDMA, 16, 8, ["NET/IB/0/GDRDMA", "NET/IB/7/GDRDMA"]),
    ("efa-ofi.log", probe.RDMA, 16, 8, ["NET/Libfabric/0/GDRDMA", "NET/Libfabric/7/GDRDMA"]),
    ("mnnvl.log", probe.NVLINK, 8, 4, ["P2P/MNNVL/read"]),
])
def test_the_expected_transport_at_full_bandwidth_passes(log: str, expect: str, ranks: int, gpus: int,
                                                          between: list[str]) -> None:
    r = probe.judge(path(expect, ranks=ranks), facts(log), 380.0, gpus_per_node=gpus, threshold=0.5)
    assert r["ok"] and r["problems"] == []
    assert r["transport"]["betweenNodes"] == between
    assert (r["busbwGBs"], r["expectedBusbwGBs"], r["fraction"]) == (380.0, 400.0, 0.95)


def test_a_planted_socket_fallback_fails_naming_the_cause_and_the_fix() -> None:
    r = probe.judge(path(probe.RDMA), facts("socket-fallback.log"), 2.1, gpus_per_node=8, threshold=0.5)
    assert not r["ok"]
    assert r["transport"]["betweenNodes"] == ["NET/Socket/0"] and r["transport"]["networks"] == ["Socket"]
    assert r["problems"] == [
        "between nodes NET/Socket/0: " + probe.CAUSES[(probe.RDMA, probe.SOCKET)],
        "GpuPool.device_claims: the pool's RDMA NIC claim"]
    assert "NCCL_IB_DISABLE=1" in r["problems"][0] and "RDMA NIC claim" in r["problems"][0]


def test_the_network_where_multi_node_nvlink_is_expected_fails_naming_the_imex_channel() -> None:
    r = probe.judge(path(probe.NVLINK, 900.0, ranks=8), facts("mnnvl-fallback.log"), 180.0, gpus_per_node=4,
                    threshold=0.5)
    assert not r["ok"] and r["transport"]["betweenNodes"] == ["NET/IB/0/GDRDMA", "NET/IB/3/GDRDMA"]
    assert "IMEX channel" in r["problems"][0] and "NCCL_MNNVL_ENABLE=0" in r["problems"][0]


def test_gpus_of_one_node_over_host_memory_fail() -> None:
    r = probe.judge(path(probe.RDMA), facts("shm-inside.log"), 390.0, gpus_per_node=8, threshold=0.5)
    assert not r["ok"] and r["transport"]["insideNodes"] == ["SHM/direct"]
    assert r["problems"][0] == "inside a node SHM/direct: " + probe.CAUSES[(probe.NVLINK, probe.SHM)]


def test_sockets_are_accepted_where_the_plan_expects_them() -> None:
    """ACK's ebmgn8v pods have no eRDMA: the plan expects TCP, and judges only the bandwidth."""
    r = probe.judge(path(probe.SOCKET, 21.25), facts("socket-fallback.log"), 18.0, gpus_per_node=8, threshold=0.5)
    assert r["ok"]


def test_a_planted_low_bandwidth_on_the_right_transport_fails() -> None:
    r = probe.judge(path(probe.RDMA), facts("ib-a4.log"), 48.0, gpus_per_node=8, threshold=0.5)
    assert not r["ok"]
    assert r["problems"][0] == ("bus bandwidth 48.0 GB/s is 12% of the expected 400.0 GB/s (the catalog), under the "
                                "threshold of 50%: " + probe.LOW_BANDWIDTH)


def test_the_bus_bandwidth_is_nccl_tests() -> None:
    # 1 GB in 10 ms on 16 ranks: algbw 100 GB/s; all-reduce x 2(n-1)/n = 187.5, all-to-all x (n-1)/n = 93.75.
    assert probe.bus_bandwidth("all_reduce", 10**9, 0.01, 16) == pytest.approx(187.5)
    assert probe.bus_bandwidth("all_to_all", 10**9, 0.01, 16) == pytest.approx(93.75)


# ---------------------------------------------------------------------------------------------------------------
# The script under torch.distributed.run, on CPU


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeKubernetes:
    """The one API call the probe makes: a merge patch of its own Job's annotations, with the pod's token."""

    TOKEN = "fabric-check-token"

    def __init__(self, tmp: Path) -> None:
        self.patches: list[tuple[str, str, dict[str, Any]]] = []
        self.account = tmp / "serviceaccount"
        self.account.mkdir()
        (self.account / "token").write_text(self.TOKEN + "\n")
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_PATCH(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.patches.append((self.path, self.headers.get("Content-Type", ""), body))
                self.send_response(200 if self.headers.get("Authorization") == f"Bearer {outer.TOKEN}" else 401)
                self.end_headers()
                self.wfile.write(b"{}")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def env(self) -> dict[str, str]:
        """What the check's pod has: the Job's own name (``fabric_check``) and the service account (here, fake)."""
        host, port = self.httpd.server_address[:2]
        return {"K3_NAMESPACE": "kimi-k3", "K3_JOB_NAME": "k3-fabric-0", "K3_KUBE_API": f"http://{host}:{port}",
                "K3_SERVICE_ACCOUNT_DIR": str(self.account)}

    def annotations(self) -> dict[str, str]:
        """The one patch: the report's annotation on the Job."""
        (path_, ctype, body), = self.patches
        assert (path_, ctype) == ("/apis/batch/v1/namespaces/kimi-k3/jobs/k3-fabric-0", "application/merge-patch+json")
        return body["metadata"]["annotations"]


@pytest.fixture
def kube(tmp_path: Path) -> Iterator[FakeKubernetes]:
    k = FakeKubernetes(tmp_path)
    yield k
    k.httpd.shutdown()


def _run(plan: dict[str, object], tmp: Path, extra: dict[str, str] | None = None) -> tuple[list[int], str, Path]:
    """Two "nodes" of two ranks each, as the check Job starts them (node rank and leader address from the LWS
    variables), with gloo."""
    if not ENGINES_PYTHON.exists() or subprocess.run([str(ENGINES_PYTHON), "-c", "import torch"]).returncode:
        pytest.skip("no torch in .engines-venv")
    port, log = _free_port(), tmp / "termination-log"
    script = ROOT / "k3infra" / "fabric_probe.py"
    procs = []
    for node in (0, 1):
        env = {**os.environ, "LWS_LEADER_ADDRESS": "127.0.0.1", "LWS_WORKER_INDEX": str(node), "LWS_GROUP_SIZE": "2",
               "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo", "PYTHONPATH": "", **(extra or {})}
        procs.append(subprocess.Popen(
            [str(ENGINES_PYTHON), "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=2",
             f"--node-rank={node}", "--master-addr=127.0.0.1", f"--master-port={port}", str(script),
             "--plan", json.dumps(plan), "--backend", "gloo", "--bytes", str(1 << 20), "--warmup", "1", "--iters", "3",
             "--termination-log", str(log)],
            env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=300)[0] for p in procs]
    return [p.returncode for p in procs], "\n".join(outs), log


def _plan(expected: float) -> dict[str, object]:
    return {"gpusPerNode": 2, "threshold": 0.5, "paths": [
        {"name": "tensor-parallel", "collective": "all_reduce", "ranks": [0, 1, 2, 3], "expect": "socket",
         "expectedBusbwGBs": expected, "basis": "loopback"},
        {"name": "expert-parallel", "collective": "all_to_all", "ranks": [0, 1], "expect": "socket",
         "expectedBusbwGBs": expected, "basis": "loopback"}]}


def test_the_script_runs_an_all_reduce_and_an_all_to_all_across_two_nodes_of_two_ranks(
        tmp_path: Path, kube: FakeKubernetes) -> None:
    codes, out, log = _run(_plan(0.0001), tmp_path, kube.env())
    assert codes == [0, 0], out
    (line,) = [ln for ln in out.splitlines() if ln.startswith(probe.REPORT_PREFIX)]
    report = json.loads(line[len(probe.REPORT_PREFIX):])
    assert (report["backend"], report["worldSize"], report["bytes"]) == ("gloo", 4, 1 << 20)
    assert [(p["path"], p["collective"], p["ranks"], p["ok"]) for p in report["paths"]] == [
        ("tensor-parallel", "all_reduce", 4, True), ("expert-parallel", "all_to_all", 2, True)]
    assert all(p["busbwGBs"] > 0 and p["transport"] == "gloo (no NCCL log)" for p in report["paths"])
    assert log.read_text().startswith("ok tensor-parallel (all_reduce, 4 ranks): ")
    # The leader, and only it, patched the report into its Job: the stack output reads it from there.
    published = json.loads(kube.annotations()[probe.ANNOTATION])
    assert published == {"status": "passed", **report}
    planned = {p["name"]: p for p in _plan(0.0001)["paths"]}  # type: ignore[union-attr]
    output = fabric_report.group_output(kube.annotations(), "kimi-k3", "k3-fabric-0", "complete", planned, 0.5)
    assert (output["status"], [(p["name"], p["status"], p["transport"]) for p in output["paths"]]) == (
        "passed", [("tensor-parallel", "passed", "gloo (no NCCL log)"), ("expert-parallel", "passed", "gloo (no NCCL log)")])
    assert all(p["busbwGBs"] == r["busbwGBs"] > 0 for p, r in zip(output["paths"], report["paths"]))


def test_a_planted_expectation_it_cannot_reach_fails_every_rank_and_says_why(tmp_path: Path,
                                                                              kube: FakeKubernetes) -> None:
    codes, out, log = _run(_plan(1e6), tmp_path, kube.env())
    assert codes == [1, 1], out
    published = json.loads(kube.annotations()[probe.ANNOTATION])
    assert (published["status"], [p["ok"] for p in published["paths"]]) == ("failed", [False, False])
    text = log.read_text()
    assert text.startswith("FAILED tensor-parallel (all_reduce, 4 ranks): ")
    assert "of the expected 1000000.0 GB/s (loopback), under the threshold of 50%" in text


def test_the_probe_imports_nothing_of_k3infra() -> None:
    source = (ROOT / "k3infra" / "fabric_probe.py").read_text()
    assert "k3infra" not in "".join(ln for ln in source.splitlines() if ln.startswith(("import", "from")))
    assert shutil.which("python3")
    # It runs as a file from a ConfigMap: nothing beside it.
    subprocess.run([sys.executable, str(ROOT / "k3infra" / "fabric_probe.py"), "--help"], check=True,
                   capture_output=True, cwd="/", env={"PATH": os.environ["PATH"]})


def test_a_refused_report_is_said_and_nothing_is_sent_outside_a_job(kube: FakeKubernetes) -> None:
    (kube.account / "token").write_text("another-token")
    refused = probe.publish({"status": "passed", "paths": []}, kube.env())
    assert refused and refused.startswith("cannot publish the report on Job kimi-k3/k3-fabric-0 (annotation "
                                          "k3infra.dev/fabric-check): HTTP Error 401")
    assert probe.publish({"status": "passed"}, {"K3_KUBE_API": kube.env()["K3_KUBE_API"]}) is None
    assert len(kube.patches) == 1
