"""The bash every machine of a PAI-EAS distributed unit runs: vLLM's multi-node launch by ``RANK_ID``, and a health
responder on the serving port for the ranks that serve no HTTP.

EAS probes every instance of a unit. A service has one ``containers[]`` spec with one ``startup_check`` and one
``health_check``, and each machine of a unit is an instance of it (PAI "Multi-node distributed inference": "All
instances in the new Unit start in parallel. After all instances in the new Unit are ready, the system removes
traffic from the old Unit"; "Health check": the probes are Kubernetes probes, run per container). Nothing there
exempts ranks != 0 from the probes, and a vLLM rank started with ``--headless`` runs only the multiprocessing
executor, no API server (vllm 0.33.0 ``vllm/entrypoints/cli/serve.py`` ``run_headless``): nothing would listen on
the probed port, and the unit would never become ready. So a rank != 0 starts a responder on that port first and
then ``exec``s vLLM, which keeps the shell's PID: the responder answers the health path with 200 only while that
process is alive (not a zombie, and the same process: its start time is checked, so a reused PID does not count),
503 otherwise, and exits as soon as the process is gone, so its lifetime is vLLM's.

The responder is the engine image's own ``python3`` and its standard library (the vLLM image installs Python as
``/usr/bin/python3``, vllm-project/vllm ``docker/Dockerfile`` vllm-base stage): nothing is downloaded at start.
Rank 0 serves the real ``/health`` itself, which turns 200 only once the whole unit has loaded.
"""

import shlex
from typing import Sequence

from ..serving.engine import EngineCommand, Role, shell_word

RANK_ENV = "RANK_ID"
"""The instance's number within its unit, 0 for the instance that takes the traffic (PAI "Multi-node distributed
inference", Appendix)."""

EAS_RDMA_SETUP = ('if [ -n "${COMM_IFNAME:-}" ]; then export NCCL_SOCKET_IFNAME="$COMM_IFNAME" '
                  'GLOO_SOCKET_IFNAME="$COMM_IFNAME"; fi')
"""EAS names the inter-machine NIC of a distributed unit in ``COMM_IFNAME`` (UNCONFIRMED: third-party EAS recipes)."""

EAS_LEADER_ADDRESS = "${MASTER_ADDRESS}"
"""Address of rank 0 EAS gives every machine of a unit (UNCONFIRMED: third-party EAS recipes; the official page
documents ``RANK_ID``)."""

RANK_HEALTH_RESPONDER = """\
import http.server, sys, threading, time
pid, port, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def stat():
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
first = stat()
started = first[19] if first else None
def alive():
    s = stat()
    return s is not None and s[0] not in ("Z", "X") and s[19] == started
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = (200 if alive() else 503) if self.path.split("?")[0] == path else 404
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("", port), Health)
def watch():
    while alive():
        time.sleep(1)
    server.shutdown()
threading.Thread(target=watch, daemon=True).start()
server.serve_forever()
"""
"""The responder: ``python3 -c RANK_HEALTH_RESPONDER PID PORT PATH``. ``/proc/PID/stat`` gives the state (after
the command name's closing parenthesis) and the start time (field 22): the process counts as alive while it
exists, is neither a zombie nor dead, and started when it did at the responder's start."""


def rank_health_responder(port: int, health_path: str) -> str:
    """The shell line that starts the responder in the background for this shell's PID (``$$``, vLLM's after
    ``exec``) on ``port``, answering ``health_path``."""
    return f'python3 -c {shlex.quote(RANK_HEALTH_RESPONDER)} "$$" {port} {shlex.quote(health_path)} &'


def unit_script(leader: EngineCommand, worker: EngineCommand, setup: Sequence[str], health_path: str) -> str:
    """The bash of every machine of a unit: ``setup``, then by ``RANK_ID`` either the leader's engine (rank 0, it
    serves HTTP on ``leader.port``) or the health responder on that port and the worker's ``--headless`` engine."""
    if leader.role != Role.LEADER or worker.role != Role.WORKER or not leader.serves_http:
        raise ValueError("a unit runs a leader that serves HTTP and workers")

    def engine(command: EngineCommand) -> str:
        return "exec " + " ".join(shell_word(t) for t in command.argv)

    lines = [
        "set -eo pipefail",
        *setup,
        f'if [ "${{{RANK_ENV}}}" = "0" ]; then',
        *("  " + line for line in [*leader.before, engine(leader)]),
        "fi",
        *worker.before,
        rank_health_responder(leader.port, health_path),
        engine(worker),
    ]
    return "\n".join(lines) + "\n"
