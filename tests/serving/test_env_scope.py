"""Every variable an engine command sets works with the model source and load format it is combined with
(catalog/recipes.py ENV_SCOPE): the recipe's VLLM_USE_RUST_FRONTEND is left off for an object-store model, whose
URI vLLM 0.33.0's Rust frontend receives raw and cannot open (issue 23 item 2)."""

import dataclasses
import functools
import json
import shlex
from typing import Any, Iterator

import pytest

from k3infra import offline, planning
from k3infra.catalog import MODELS, EngineName, Loader, ModelSource
from k3infra.catalog.distribution import STREAMER_GLOBAL_ENV, STREAMER_PARTITION_ENV
from k3infra.catalog.topologies import VLLM_ROLE_RECIPES
from k3infra.catalog.recipes import (
    ENGINE_READY_TIMEOUT_ENV,
    ENV_SCOPE,
    VLLM_BY_ARCHITECTURE,
    VLLM_PIPELINE_PARALLEL,
    env_scope_problems,
)
from k3infra.config import StackConfig
from k3infra.serving.engine import SGLANG_ENV, SGLANG_STREAMER_ENV, EngineSpec, Role, sglang_command, vllm_command
from tests.support import ROOT, STACKS, plan

RUST = "VLLM_USE_RUST_FRONTEND"
AZ_MODEL = "az://kimi-k3-weights/models/moonshotai/Kimi-K3"


@functools.lru_cache(maxsize=None)
def config(stack: str, *sets: str) -> StackConfig:
    return planning.validate(planning.load(stack, sets, root=ROOT))


def test_every_variable_an_engine_command_sets_has_a_scope() -> None:
    vllm = {k for s in (*VLLM_BY_ARCHITECTURE.values(), VLLM_PIPELINE_PARALLEL) for k in s.env}
    distribution = {STREAMER_GLOBAL_ENV, STREAMER_PARTITION_ENV}  # catalog.distribution.streamer_env, both engines
    vllm |= {k for m in MODELS.values() for k in m.vllm_env} | {ENGINE_READY_TIMEOUT_ENV} | distribution
    # a disaggregated role's (catalog/topologies.py: the recipe's pd_cluster env, NIXL's side channel, UCX_TLS)
    roles = {k for r in VLLM_ROLE_RECIPES.values() for k in r.env} | {"VLLM_NIXL_SIDE_CHANNEL_PORT", "UCX_TLS"}
    assert vllm | roles == set(ENV_SCOPE[EngineName.VLLM])
    assert {*SGLANG_ENV, *SGLANG_STREAMER_ENV, *distribution} == set(ENV_SCOPE[EngineName.SGLANG])
    assert all(scope.sources and scope.source for e in ENV_SCOPE.values() for scope in e.values())


def test_the_rust_frontend_is_off_for_an_object_store_model_and_on_otherwise() -> None:
    """azure-gb300 streams az://: both ranks run without the Rust frontend, and the plan says so. The same
    stack reading a mounted copy keeps the recipe's variable."""
    cfg = config("azure-gb300")
    assert cfg.weights.loader == Loader.STREAMER
    for role in (Role.LEADER, Role.WORKER):
        cmd = vllm_command(cfg, model=AZ_MODEL, role=role)
        assert RUST not in cmd.env and cmd.left_off == (RUST,)
        assert cmd.env["VLLM_USE_V2_MODEL_RUNNER"] == "1"  # the rest of the recipe's Blackwell variables stay
    mounted = vllm_command(config("azure-gb300", "weights.loader=bucket-copy"), model="/mnt/models/m", role=Role.LEADER)
    assert mounted.env[RUST] == "1" and mounted.left_off == ()
    assert any(RUST in w and "object-store URI" in w for w in plan("azure-gb300").warnings)
    # Exactly the vLLM stacks that stream from an object store (azure's az://, the existing clusters' S3) say so.
    streamed = {s for s in STACKS if config(s).weights.loader == Loader.STREAMER and config(s).engine.name == "vllm"}
    assert streamed == {"azure-gb300", "kubernetes-b300", "kubernetes-gb300-nvl72", "azure-gb300-pd",
                        "kubernetes-gb300-nvl72-pd"}
    assert {s for s in STACKS if any(RUST in w for w in plan(s).warnings)} == streamed


def test_a_model_argument_must_be_the_source_the_spec_names() -> None:
    """The variables are chosen for the spec's source, so an object-store URI given to a spec that says local
    (or the reverse) is refused rather than served with the Rust frontend on."""
    spec = EngineSpec.of(config("azure-gb300", "weights.loader=bucket-copy"))
    with pytest.raises(ValueError, match="is given as object-store URI, but the spec's model source is local"):
        vllm_command(spec, model=AZ_MODEL, role=Role.LEADER)
    streamed = dataclasses.replace(spec, model_source=ModelSource.OBJECT_STORE)
    with pytest.raises(ValueError, match="given as local directory, but the spec's model source is object-store"):
        vllm_command(streamed, model="/mnt/models/m", role=Role.LEADER)
    sglang = EngineSpec.of(config("gcp-a4-sglang"))
    with pytest.raises(ValueError, match="is given as object-store URI"):
        sglang_command(sglang, model="gs://b/m", node_rank="0", dist_init_addr="h:1", draft_model="/d")


def _walk(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)


def _option(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def engine_invocations(stack: str) -> list[dict[str, Any]]:
    """Every engine invocation of a stack's plan as rendered: the engine, its model argument (the pod's
    K3_MODEL where the script names it), its --load-format and the environment it runs with."""
    out = []
    for r in plan(stack).recording.ordered():
        inputs = offline.unwrap(r.inputs)
        if r.type == "alicloud:pai/service:Service":
            for c in json.loads(inputs["serviceConfig"])["containers"]:
                out += _from_script(c["script"], {e["name"]: e.get("value") for e in c["env"]})
        elif r.type.endswith(":InferenceEndpointConfig"):
            worker = inputs["spec"]["worker"]
            env = {e["name"]: e.get("value") for e in worker.get("environmentVariables") or []}
            out.append({"engine": EngineName.VLLM, "model": _option(worker["args"], "--model"),
                        "load_format": _option(worker["args"], "--load-format"), "env": env})
        for node in _walk(inputs):
            for c in node.get("containers") or []:
                if isinstance(c, dict) and c.get("name") == "engine":
                    out += _from_script(c["args"][0], {e["name"]: e.get("value") for e in c.get("env") or []})
    return out


def _from_script(script: str, env: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for line in script.splitlines():
        if line.strip().startswith("exec "):
            argv = shlex.split(line.strip())[1:]
            engine = EngineName(argv[0])
            model = argv[2] if engine == EngineName.VLLM else _option(argv, "--model-path")
            if model == "${K3_MODEL}":
                model = env["K3_MODEL"]
            out.append({"engine": engine, "model": model, "load_format": _option(argv, "--load-format"), "env": env})
    return out


def _problems(inv: dict[str, Any]) -> list[str]:
    return env_scope_problems(inv["engine"], inv["env"], ModelSource.of(inv["model"]), inv["load_format"])


@pytest.mark.parametrize("stack", STACKS)
def test_every_stacks_engine_environment_works_with_its_model_source_and_loader(stack: str) -> None:
    invocations = engine_invocations(stack)
    assert invocations
    assert {ModelSource.of(i["model"]) for i in invocations} == {config(stack).weights.loader.model_source}
    assert {i["load_format"] for i in invocations} == {config(stack).load_format}
    assert [p for i in invocations for p in _problems(i)] == []


def test_the_stacks_cover_an_object_store_model_and_a_local_one() -> None:
    sources = {ModelSource.of(i["model"]) for s in STACKS for i in engine_invocations(s)}
    assert {ModelSource.OBJECT_STORE, ModelSource.LOCAL} <= sources


def test_the_rust_frontend_planted_on_an_object_store_model_is_found() -> None:
    """The check fails on the combination the review found: azure-gb300's rendered leader with the recipe's
    VLLM_USE_RUST_FRONTEND=1 put back; and on the streamer's variables with a load format that does not stream."""
    leader = engine_invocations("azure-gb300")[0]
    assert _problems(leader) == []
    planted = {**leader, "env": {**leader["env"], RUST: "1"}}
    [problem] = _problems(planted)
    assert problem.startswith(f"{RUST} does not work with the model given as object-store URI and --load-format "
                              "runai_streamer: vllm 0.33.0 entrypoints/cli/serve.py")
    sglang = engine_invocations("gcp-a4-sglang")[0]
    assert _problems(sglang) == [] and "RUNAI_STREAMER_MEMORY_LIMIT" in sglang["env"]
    assert [p.split(" ")[0] for p in _problems({**sglang, "load_format": "auto"})] == [
        "RUNAI_STREAMER_CONCURRENCY", "RUNAI_STREAMER_DIST_GLOBAL", "RUNAI_STREAMER_MEMORY_LIMIT",
        "RUNAI_STREAMER_PARTITION_POLICY", "SGLANG_USE_RUNAI_MODEL_STREAMER"]
