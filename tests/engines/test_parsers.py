"""Every engine command line k3infra renders, run through the pinned releases' own argument parsers.

The parsers live in .engines-venv (scripts/test installs vLLM and SGLang there at the versions the catalog
pins); tests/engines/parse_commands.py runs them. Every stack is planned, every container script's ``exec``
line (leader, worker, single, the StatefulSet's both branches), HyperPod's InferenceEndpointConfig
``worker.args`` and PAI-EAS's script are extracted, their run-time variables given sample values, and the
lot parsed in one process. Planted mistakes show the test can fail.
"""

import functools
import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from k3infra import offline
from k3infra.catalog import ENGINES, EngineName
from k3infra.catalog.recipes import IGNORED_ENV
from tests.support import ROOT, SGLANG_PD, STACKS, plan

RUNTIME_VALUES = {
    "LWS_WORKER_INDEX": "1", "POD_INDEX": "1", "RANK_ID": "1", "K3_DP_START_RANK": "4",
    "LWS_LEADER_ADDRESS": "kimi-k3-0.kimi-k3", "MASTER_ADDRESS": "10.0.0.2",
}
"""Values the kubelet or the shell gives the variables in a command line (ranks and leader addresses)."""

VARIANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    **{s: (s, ()) for s in STACKS},
    "aws-eks+dspark": ("aws-eks", ("speculativeDecoding=dspark",
                                   "weights={bucket: my-org-kimi-k3-weights, revision: main, draftRevision: main}")),
    "gcp-a4-sglang+statefulset": ("gcp-a4-sglang", ("workload=statefulset",)),
    # issue 37: wide expert parallelism (DEP groups, aggregated) on vLLM over EFA (no DeepEP there)
    "aws-eks+wide-ep": ("aws-eks", ("nodes=2", "topology={mode: wide-ep}")),
    # issue 37 §2: SGLang's prefill and decode roles on the GKE SGLang stacks
    **{f"{s}+pd": (s, sets) for s, sets in SGLANG_PD.items()},
}
"""Every stack, and the shapes no stack file shows: DSpark on vLLM, SGLang in 000's StatefulSet."""

VARIABLE = re.compile(r"\$\((\w+)\)|\$\{(\w+)\}")


def engines_python() -> str:
    """$K3INFRA_ENGINES_PYTHON, else .engines-venv/bin/python (scripts/test installs it). Never skipped."""
    for candidate in (os.environ.get("K3INFRA_ENGINES_PYTHON"), str(ROOT / ".engines-venv/bin/python")):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail("the engines' parsers are not installed: run ./scripts/test (it creates .engines-venv)")


def _concrete(token: str) -> str:
    return VARIABLE.sub(lambda m: RUNTIME_VALUES.get(m.group(1) or m.group(2), f"/run/{m.group(1) or m.group(2)}"),
                        token)


def exec_lines(script: str) -> Iterator[list[str]]:
    """The argv of every ``exec`` line of a container script (both branches of a by-index script)."""
    for line in script.splitlines():
        line = line.strip()
        if line.startswith("exec "):
            yield [_concrete(t) for t in shlex.split(line)[1:]]


def _walk(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)


def _env_names(container: dict[str, Any]) -> list[str]:
    return [e["name"] for e in container.get("env") or []]


def commands(variant: str) -> list[dict[str, Any]]:
    """Every engine invocation of a variant's plan: ``{"id", "engine", "args", "env"}``."""
    out: list[dict[str, Any]] = []
    stack, sets = VARIANTS[variant]
    for r in plan(stack, *sets).recording.ordered():
        inputs = offline.unwrap(r.inputs)
        if r.type == "alicloud:pai/service:Service":
            config = json.loads(inputs["serviceConfig"])
            for c in config["containers"]:
                out += _from_script(f"{variant}/{r.name}", c["script"], _env_names(c))
        elif r.type.endswith(":InferenceEndpointConfig"):
            worker = inputs["spec"]["worker"]
            out.append({"id": f"{variant}/{r.name}/worker.args", "engine": "vllm",
                        "args": [_concrete(a) for a in worker["args"]],
                        "env": [e["name"] for e in worker.get("environmentVariables") or []]})
        for node in _walk(inputs):
            for c in node.get("containers") or []:
                if isinstance(c, dict) and c.get("command") == ["/bin/bash", "-c"] and c.get("name") == "engine":
                    out += _from_script(f"{variant}/{r.name}/{len(out)}", c["args"][0], _env_names(c))
    return out


def _from_script(ident: str, script: str, env: list[str]) -> list[dict[str, Any]]:
    out = []
    for i, argv in enumerate(exec_lines(script)):
        program, args = argv[:2], argv[2:]
        assert program in (["vllm", "serve"], ["sglang", "serve"]), f"{ident}: {program}"
        out.append({"id": f"{ident}#{i}", "engine": program[0], "args": args, "env": env})
    return out


def run_parsers(requests: list[dict[str, Any]]) -> dict[str, Any]:
    proc = subprocess.run([engines_python(), str(Path(__file__).with_name("parse_commands.py"))],
                          input=json.dumps(requests), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@functools.lru_cache(maxsize=None)
def all_stacks() -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    requests = {v: commands(v) for v in VARIANTS}
    report = run_parsers([r for rs in requests.values() for r in rs])
    return requests, report


def test_the_venv_holds_the_releases_the_catalog_pins() -> None:
    _, report = all_stacks()
    assert report["versions"] == {e.package: e.release for e in ENGINES.values()}
    assert report["dependencies"] == {"vllm": {"flashinfer-python": {"pinned": "0.7.2.post1",
                                                                     "installed": "0.7.2.post1"}},
                                      "sglang": {}}
    script = (ROOT / "scripts" / "test").read_text()
    for e in ENGINES.values():
        assert f"{e.name.upper()}_VERSION={e.release}" in script


@pytest.mark.parametrize("stack", VARIANTS)
def test_every_command_line_of_every_stack_parses(stack: str) -> None:
    requests, report = all_stacks()
    mine = {r["id"]: r for r in requests[stack]}
    results = [r for r in report["results"] if r["id"] in mine]
    assert results and len(results) == len(mine)
    assert {r["id"]: r["errors"] for r in results if r["errors"]} == {}
    for r in results:
        engine = EngineName(mine[r["id"]]["engine"])
        assert set(r["unread_env"]) <= set(IGNORED_ENV[engine]), (
            f"{r['id']}: the pinned release reads none of {r['unread_env']}: list it in IGNORED_ENV or drop it")


def test_every_role_is_covered() -> None:
    """Leader, worker and single lines, HyperPod's args and PAI-EAS's script all reach the parsers."""
    requests, _ = all_stacks()
    flat = [r for rs in requests.values() for r in rs]
    assert any("--headless" in r["args"] for r in flat)
    assert any("--node-rank" in r["args"] and r["args"][r["args"].index("--node-rank") + 1] == "0" for r in flat)
    assert any(r["engine"] == "sglang" for r in flat)
    assert any(r["id"].endswith("worker.args") for r in flat)
    assert any(r["id"].startswith("alicloud-pai/") for r in flat)
    pai = [r for r in requests["alicloud-pai"]]
    assert len(pai) == 2 and {"--headless" in r["args"] for r in pai} == {True, False}
    assert any("--speculative-config" in r["args"] for r in requests["aws-eks+dspark"])
    # gcp-a4-sglang's LeaderWorkerSet: the leader's rank 0 and the worker's $(LWS_WORKER_INDEX), the leader's address
    sglang = requests["gcp-a4-sglang"]
    assert {r["args"][r["args"].index("--node-rank") + 1] for r in sglang} == {"0", RUNTIME_VALUES["LWS_WORKER_INDEX"]}
    assert {r["args"][r["args"].index("--dist-init-addr") + 1] for r in sglang} == {
        RUNTIME_VALUES["LWS_LEADER_ADDRESS"] + ":20000"}
    assert requests["gcp-a4-sglang+statefulset"][0]["args"][
        requests["gcp-a4-sglang+statefulset"][0]["args"].index("--node-rank") + 1] == RUNTIME_VALUES["POD_INDEX"]
    # gcp-a4x-sglang: 4 ranks with gpu-recipes' A4X flags, each once (the recipe's value replaces 000's)
    a4x = requests["gcp-a4x-sglang"]
    assert {r["args"][r["args"].index("--node-rank") + 1] for r in a4x} == {"0", RUNTIME_VALUES["LWS_WORKER_INDEX"]}
    for r in a4x:
        assert [r["args"][r["args"].index(f) + 1] for f in ("--nnodes", "--dcp-size", "--mamba-full-memory-ratio",
                                                           "--dist-timeout")] == ["4", "16", "7.21", "3600"]
        assert r["args"].count("--mamba-full-memory-ratio") == 1


def _planted(base: dict[str, Any], *extra: str, replace: tuple[str, str] | None = None) -> dict[str, Any]:
    args = list(base["args"])
    if replace:
        i = args.index(replace[0])
        args[i + 1] = replace[1]
    return {**base, "id": f"planted {extra or replace}", "args": args + list(extra)}


def test_every_role_of_a_disaggregated_stack_parses() -> None:
    """Prefill and decode, leader and worker, of each disaggregated stack: the recipe's pd_cluster flags, the
    NixlConnector config the release's KVTransferConfig accepts, DEP's data-parallel wiring from the LeaderWorkerSet."""
    requests, _ = all_stacks()
    for stack in ("gcp-a4xmax-pd", "azure-gb300-pd", "aws-eks-pd", "kubernetes-gb300-nvl72-pd"):
        lines = requests[stack]
        roles = {json.loads(r["args"][r["args"].index("--kv-transfer-config") + 1])["kv_role"] for r in lines}
        assert roles == {"kv_producer", "kv_consumer"}, stack
        decode = [r for r in lines if "--data-parallel-hybrid-lb" in r["args"]]
        assert decode and all(r["args"][r["args"].index("--tensor-parallel-size") + 1] == "1" for r in decode)
        assert {r["args"][r["args"].index("--data-parallel-start-rank") + 1] for r in decode} >= {"0"}
    eks = requests["aws-eks-pd"]
    assert all(json.loads(r["args"][r["args"].index("--kv-transfer-config") + 1])["kv_connector_extra_config"]
               == {"backends": ["LIBFABRIC"]} for r in eks)  # llm-d guides/pd-disaggregation's aws patch
    assert {r["args"][r["args"].index("--all2all-backend") + 1] for r in eks if "--all2all-backend" in r["args"]} == {
        "allgather_reducescatter"}


def test_sglang_role_lines_parse() -> None:
    """SGLang's prefill and decode lines (--disaggregation-mode, its transfer backend, the bootstrap port) and a DEP
    group's --attn-dp-size / --ep-size, through SGLang 0.5.23's parser, on GB300 (the GKE stacks' own are the
    ``+pd`` variants above)."""
    from k3infra.catalog import ACCELERATORS, EngineName
    from k3infra.catalog.topologies import KvTransport, Parallelism, RoleName
    from k3infra.serving.engine import EngineSpec, RoleSpec, sglang_command

    gb300 = ACCELERATORS["gb300-nvl72"]
    out = []
    for role, par, tp in ((RoleName.PREFILL, Parallelism.TEP, 8), (RoleName.DECODE, Parallelism.DEP, 16),
                          (None, Parallelism.DEP, 16)):
        spec = EngineSpec.named("moonshotai/Kimi-K3", EngineName.SGLANG, nodes=tp // 4, tensor_parallel=tp,
                                accelerator=gb300)
        spec = EngineSpec(**{**spec.__dict__, "role": RoleSpec(role, par, transport=KvTransport.UCX_RDMA)})
        cmd = sglang_command(spec, model="/models/Kimi-K3", node_rank="1", dist_init_addr="kimi-k3-0.kimi-k3:20000")
        out.append({"id": f"sglang {role} {par}", "engine": "sglang", "args": cmd.args, "env": list(cmd.env)})
    requests, _ = all_stacks()
    # vLLM's parser first, as in the full run (SGLang's stands in for Triton, which vLLM's torch import must not see)
    report = run_parsers([requests["gcp-a4xmax-pd"][0], *out])
    assert [r["errors"] for r in report["results"]] == [[], [], [], []]
    assert out[0]["args"][out[0]["args"].index("--disaggregation-mode") + 1] == "prefill"
    assert "--disaggregation-bootstrap-port" in out[0]["args"] and "--disaggregation-bootstrap-port" not in out[1]["args"]
    assert out[2]["args"][out[2]["args"].index("--attn-dp-size") + 1] == "16"


def test_planted_kv_transfer_mistakes_are_rejected() -> None:
    """A wrong connector, role or failure policy in --kv-transfer-config fails the release's own config class."""
    requests, _ = all_stacks()
    base = next(r for r in requests["gcp-a4xmax-pd"] if "--kv-transfer-config" in r["args"])
    good = json.loads(base["args"][base["args"].index("--kv-transfer-config") + 1])
    planted = [_planted(base, replace=("--kv-transfer-config", json.dumps({**good, **change})))
               for change in ({"kv_connector": "NixlConector"}, {"kv_role": "kv_producr"},
                              {"kv_load_failure_policy": "retry"}, {"kv_buffer": "cpu"})]
    planted.append(_planted(base, replace=("--all2all-backend", "deepep")) if "--all2all-backend" in base["args"]
                   else _planted(base, "--all2all-backend", "deepep"))
    errors = [r["errors"] for r in run_parsers(planted)["results"]]
    assert "kv_connector 'NixlConector' is not one of" in errors[0][0]
    # the release's own parser refuses these (its pydantic KVTransferConfig); the connector name only the check above
    assert errors[1][0].endswith("/v/literal_error") and errors[2][0].endswith("/v/literal_error")
    assert errors[3][0].endswith("/v/unexpected_keyword_argument")
    assert "invalid choice: 'deepep'" in errors[4][0]


def _value(r: dict[str, Any], flag: str) -> str | None:
    return r["args"][r["args"].index(flag) + 1] if flag in r["args"] else None


@pytest.mark.parametrize("stack", SGLANG_PD)
def test_sglang_pd_roles_of_the_gke_stacks(stack: str) -> None:
    """issue 37 §2: every SGLang line of a disaggregated GKE stack (parsed above by 0.5.23's parser) names its role,
    Mooncake (the RDMA fabric's backend) and, on the prefill, the bootstrap port the decode's sidecar sends to; the
    decode's DEP group adds --attn-dp-size over every GPU, its --ep-size once; a wrong backend fails the parser."""
    from k3infra.catalog.topologies import SGLANG_SIDECAR

    requests, _ = all_stacks()
    lines = requests[f"{stack}+pd"]
    modes = sorted((_value(r, "--disaggregation-mode"), _value(r, "--node-rank")) for r in lines)
    groups = {"gcp-a4-sglang": (2, 7), "gcp-a4x-sglang": (4, 14)}[stack]
    assert modes == sorted([("decode", "0"), ("decode", "1"), ("prefill", "0"), ("prefill", "1")])
    assert {_value(r, "--disaggregation-transfer-backend") for r in lines} == {"mooncake"}
    for r in lines:
        prefill = _value(r, "--disaggregation-mode") == "prefill"
        assert _value(r, "--disaggregation-bootstrap-port") == (SGLANG_SIDECAR.env["SGLANG_BOOTSTRAP_PORT"]
                                                               if prefill else None)
        assert _value(r, "--nnodes") == str(groups[0] if prefill else groups[1])
        assert _value(r, "--attn-dp-size") == (None if prefill else "56") and r["args"].count("--ep-size") == 1
        assert _value(r, "--port") == ("30000" if prefill else "8200")  # decode: behind the sidecar
        assert "SGLANG_HOST_IP" in r["env"]
    # vLLM's parser first, as in the full run (test_sglang_role_lines_parse)
    planted = _planted(lines[0], replace=("--disaggregation-transfer-backend", "mooncake-rdma"))
    errors = [x["errors"] for x in run_parsers([requests["gcp-a4xmax-pd"][0], planted])["results"]]
    assert errors[0] == [] and "invalid choice: 'mooncake-rdma'" in errors[1][0]


def test_planted_mistakes_are_rejected() -> None:
    requests, _ = all_stacks()
    vllm = next(r for r in requests["azure-gb300"] if "--model-loader-extra-config" in r["args"])
    sglang = requests["gcp-a4-sglang"][0]
    planted = [
        _planted(vllm, "--no-such-flag"),
        _planted(vllm, replace=("--moe-backend", "fastest")),
        _planted(sglang, "--cuda-graph-max-bs", "512"),
        _planted(vllm, replace=("--model-loader-extra-config", '{"concurrency":16,"chunk_bytes":1}')),
        _planted(sglang, replace=("--model-loader-extra-config", '{"memory_limit":1,"chunk_bytes":16}')),
        _planted(vllm, "--speculative-config", '{"method":"dspark","num_speculative_tokens":8,"draft_tokens":7}'),
        _planted(vllm, "--speculative-config", '{"method":"dspark","rejection_sample_method":"lossless"}'),
    ]
    errors = [r["errors"] for r in run_parsers(planted)["results"]]
    assert "unrecognized arguments: --no-such-flag" in errors[0][0]
    assert "invalid choice: 'fastest'" in errors[1][0]
    assert "ambiguous option: --cuda-graph-max-bs could match" in errors[2][0]
    assert "Unexpected extra config keys for runai_streamer: {'chunk_bytes'}" in errors[3][0]
    assert "Unexpected extra config keys for runai_streamer: {'chunk_bytes'}" in errors[4][0]
    assert "'draft_tokens' is not a field of SpeculativeConfig" in errors[5][0]
    assert "rejection_sample_method='lossless' is not one of" in errors[6][0]


TORCH_CUDA_REQUIREMENTS = Path(__file__).with_name("torch-cuda-requirements.txt")

CHECK_TORCH_CUDA = r'''
import importlib.metadata as md, json, sys
from packaging.requirements import Requirement

def required(dist, extras=("",)):
    for line in md.requires(dist) or ():
        r = Requirement(line)
        if r.marker is None or any(r.marker.evaluate({"extra": e}) for e in extras):
            yield r

def cuda(r):
    return r.name.startswith("nvidia-") or r.name == "cuda-toolkit"

wanted = [r for r in required("torch") if cuda(r)]
wanted += [r for t in list(wanted) if t.name == "cuda-toolkit" and md.distributions(name=t.name)
           for r in required(t.name, tuple(t.extras))]
problems, needed = [], set()
for r in wanted:
    if r.name in sys.argv[1:]:
        continue
    needed.add(r.name)
    try:
        version = md.version(r.name)
    except md.PackageNotFoundError:
        problems.append(f"{r}: not installed")
        continue
    if not r.specifier.contains(version, prereleases=True):
        problems.append(f"{r}: {version} is installed")
json.dump({"needed": sorted(needed), "problems": problems}, sys.stdout)
'''
"""Run in .engines-venv: every CUDA library the installed torch requires (its own Requires-Dist and the
cuda-toolkit extras it names), except the names given, is installed at a version the requirement allows."""

TORCH_CUDA_LEFT_OUT = ("nvidia-nvtx",)
"""What torch requires but its import does not need (torch/__init__.py preloads libnvToolsExt only if present)."""


def test_torch_has_the_cuda_libraries_its_import_loads() -> None:
    """PyPI's Linux torch is a CUDA build: without its libraries `import torch` fails, and so would every
    parser. tests/engines/torch-cuda-requirements.txt lists exactly the ones torch pins (no more), at its pins."""
    proc = subprocess.run([engines_python(), "-c", CHECK_TORCH_CUDA, *TORCH_CUDA_LEFT_OUT],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["problems"] == []
    pinned = {line.split("==")[0] for line in TORCH_CUDA_REQUIREMENTS.read_text().splitlines()
              if line and not line.startswith("#")}
    assert pinned == set(report["needed"])
