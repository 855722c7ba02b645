"""Runs engine command lines through the pinned releases' own argument parsers (inside .engines-venv).

Not a test module: tests/engines/test_parsers.py starts it with the isolated venv's Python (scripts/test
installs vLLM and SGLang there, without their GPU stacks) and sends it, on stdin, a JSON list of
``{"id", "engine", "args", "env"}``; it prints a JSON list of ``{"id", "errors"}``, one per command, where
``errors`` is empty when the engine would accept the command line. Checked, with the release's own code:

- every flag, its abbreviation and its value (argparse: unknown, ambiguous, deprecated options, choices,
  types), then vLLM's own post-parse checks (``validate_parsed_serve_args``);
- ``--model-loader-extra-config``: the keys the loader of the chosen ``--load-format`` accepts (the loader's
  constructor, which raises "Unexpected extra config keys");
- ``--speculative-config`` (vLLM): keys are fields of ``SpeculativeConfig`` (extra fields are forbidden) and
  every Literal-typed value is one the release allows;
- environment: each variable is read somewhere in the release or in a dependency it pins that reads it
  (``ENV_READING_DEPENDENCIES``), or is a library's or the CUDA driver's own; else it is reported so the caller
  can check it against catalog/recipes.py ``IGNORED_ENV``. The report gives each such dependency's pinned and
  installed version.
"""

import argparse
import contextlib
import importlib.machinery
import io
import json
import os
import sys
import typing
from pathlib import Path
from typing import Any

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # vLLM's platform detection; no GPU is needed to parse

LIBRARY_ENV_PREFIXES = ("NCCL_", "RUNAI_STREAMER_", "PYTORCH_", "OMP_", "HF_", "FI_", "UCX_", "GLOO_", "LD_",
                        "AWS_", "AZURE_", "GOOGLE_", "K3_", "POD_INDEX")
"""Variables read by NCCL, the RunAI streamer, PyTorch, OpenMP, Hugging Face, libfabric, UCX, the loader, the
cloud SDKs, or k3infra's own container script (``K3_MODEL``, ``POD_INDEX``): not the engines'."""

DRIVER_ENV = frozenset({"CUDA_CACHE_PATH"})
"""Variables the CUDA driver reads, not Python code: CUDA_CACHE_PATH, the PTX JIT cache's folder (CUDA C++
Programming Guide, "CUDA Environment Variables": default ~/.nv/ComputeCache on Linux)."""

ENV_READING_DEPENDENCIES = {"vllm": ("flashinfer-python",)}
"""Distributions an engine pins exactly (``==`` in its wheel's Requires-Dist) whose own code reads variables
k3infra sets: vllm 0.33.0 pins flashinfer-python==0.7.2.post1, whose flashinfer/jit/env.py reads
FLASHINFER_WORKSPACE_BASE. Their files are scanned with the engine's, at the version the engine pins."""


def _parse(parser: argparse.ArgumentParser, args: list[str]) -> tuple[argparse.Namespace | None, str]:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(args), ""
    except SystemExit:
        return None, err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else "exit"
    except Exception as e:  # noqa: BLE001 - a type function raising is a rejection too
        return None, f"{type(e).__name__}: {e}"


def _literal_problems(cls: Any, config: dict[str, Any], what: str) -> list[str]:
    hints = typing.get_type_hints(cls)
    out = []
    for key, value in config.items():
        if key not in hints:
            out.append(f"{what}: {key!r} is not a field of {cls.__name__}")
            continue
        allowed = _literal_values(hints[key])
        if allowed and value not in allowed:
            out.append(f"{what}: {key}={value!r} is not one of {sorted(map(str, allowed))}")
    return out


def _literal_values(tp: Any) -> set[Any]:
    if typing.get_origin(tp) is typing.Literal:
        return {v for a in typing.get_args(tp) for v in (_literal_values(a) or {a})}
    if typing.get_origin(tp) in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        values: set[Any] = set()
        for a in typing.get_args(tp):
            if a is type(None):
                continue
            sub = _literal_values(a)
            if not sub:
                return set()  # a non-Literal member: any value of it may be fine
            values |= sub
        return values
    return set()


class Vllm:
    def __init__(self) -> None:
        from vllm.entrypoints.common.cli_args import make_arg_parser, validate_parsed_serve_args
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        self.parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
        self.parser.add_argument("model_tag", nargs="?")
        self.validate = validate_parsed_serve_args
        self.package = "vllm"
        self.root = Path(__import__("vllm").__file__).parent

    def check(self, args: list[str]) -> list[str]:
        ns, error = _parse(self.parser, args)
        if ns is None:
            return [error]
        errors = []
        try:
            self.validate(ns)
        except Exception as e:  # noqa: BLE001
            errors.append(f"{type(e).__name__}: {e}")
        if ns.model_loader_extra_config:
            errors += self._loader_config(ns.load_format, ns.model_loader_extra_config)
        if ns.speculative_config:
            from vllm.config.speculative import SpeculativeConfig

            errors += _literal_problems(SpeculativeConfig, dict(ns.speculative_config), "--speculative-config")
        if ns.kv_transfer_config:
            errors += self._kv_transfer(ns.kv_transfer_config) or self._effective_connector(ns)
        return errors

    @staticmethod
    def _effective_connector(ns: argparse.Namespace) -> list[str]:
        """The connector the engine runs: the release's own ``VllmConfig._post_init_kv_transfer_config`` on the parsed
        line, which lets ``--kv-offloading-size`` replace the given connector (and its role) by its own."""
        import copy
        import types

        from vllm.config.kv_transfer import KVTransferConfig
        from vllm.config.vllm import VllmConfig

        value = ns.kv_transfer_config
        given = KVTransferConfig(**value) if isinstance(value, dict) else copy.deepcopy(value)
        stand_in = types.SimpleNamespace(kv_transfer_config=copy.deepcopy(given), cache_config=types.SimpleNamespace(
            kv_offloading_size=getattr(ns, "kv_offloading_size", None),
            kv_offloading_backend=getattr(ns, "kv_offloading_backend", None)))
        VllmConfig._post_init_kv_transfer_config(stand_in)  # type: ignore[arg-type]
        runs = stand_in.kv_transfer_config
        if (runs.kv_connector, runs.kv_role) != (given.kv_connector, given.kv_role):
            return [f"--kv-transfer-config: the engine runs {runs.kv_connector} ({runs.kv_role}), not the given "
                    f"{given.kv_connector} ({given.kv_role}): --kv-offloading-size replaces it "
                    "(VllmConfig._post_init_kv_transfer_config)"]
        return []

    def _kv_transfer(self, value: Any) -> list[str]:
        """``--kv-transfer-config``: its keys are KVTransferConfig's fields, its Literal values allowed, and the class
        itself (its ``__post_init__``) accepts it; a NixlConnector's ``backends`` are NIXL backends vLLM names."""
        from vllm.config.kv_transfer import KVTransferConfig

        config = dict(value) if isinstance(value, dict) else {k: getattr(value, k) for k in ("kv_connector", "kv_role")}
        errors = _literal_problems(KVTransferConfig, config, "--kv-transfer-config")
        if errors:
            return errors
        try:
            KVTransferConfig(**config)
        except Exception as e:  # noqa: BLE001
            return [f"--kv-transfer-config: {type(e).__name__}: {e}"]
        from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory

        if config.get("kv_connector") not in KVConnectorFactory._registry:  # the names the release registers
            return [f"--kv-transfer-config: kv_connector {config.get('kv_connector')!r} is not one of "
                    f"{sorted(KVConnectorFactory._registry)}"]
        backends = (config.get("kv_connector_extra_config") or {}).get("backends") or ["UCX"]
        if config.get("kv_connector") == "NixlConnector" and not set(backends) <= {"UCX", "LIBFABRIC", "GDS", "GDS_MT"}:
            return [f"--kv-transfer-config: NIXL backends {backends} are not UCX or LIBFABRIC"]
        return []

    LOADERS = {"runai_streamer": ("runai_streamer_loader", "RunaiModelStreamerLoader")}
    """The loader class of each load format k3infra passes an extra config with."""

    def _loader_config(self, load_format: str, extra: dict[str, Any]) -> list[str]:
        from vllm.config.load import LoadConfig

        if load_format not in self.LOADERS:
            return [f"--model-loader-extra-config: k3infra passes none with --load-format {load_format}"]
        module, name = self.LOADERS[load_format]
        loader = getattr(_submodule(self.root, "model_executor.model_loader", module), name)
        try:
            loader(LoadConfig(load_format=load_format, model_loader_extra_config=dict(extra)))
        except Exception as e:  # noqa: BLE001
            return [f"--model-loader-extra-config: {type(e).__name__}: {e}"]
        return []


def _submodule(root: Path, package: str, module: str) -> Any:
    """Import ``<top>.<package>.<module>`` (``root`` is the top package's directory) without running the
    packages' ``__init__`` (vllm.model_executor's and sglang.srt.configs' import every model and its GPU or
    vision kernels, which a CPU-only install cannot load): the packages are stood in by empty modules with
    their real paths; the module itself runs unchanged."""
    import importlib
    import types

    name = root.name
    for part in package.split("."):
        name += "." + part
        if name not in sys.modules:
            stub = types.ModuleType(name)
            stub.__path__ = [str(root.joinpath(*name.split(".")[1:]))]
            sys.modules[name] = stub
    return importlib.import_module(f"{root.name}.{package}.{module}")


def _stub_triton() -> None:
    """Stand in for Triton (1 GB of GPU compiler) where it is not installed: sglang.srt.utils.common imports it
    at module level, and the argument parser needs nothing from it. Its decorators return the function."""
    import importlib.util
    import types

    if importlib.util.find_spec("triton") is not None:
        return

    class _Anything(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return _anything

    def _anything(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return _anything

    for name in ("triton", "triton.language", "triton.runtime", "triton.runtime.jit", "triton.language.extra",
                 "triton.language.extra.libdevice", "triton.testing", "triton.tools"):
        module = _Anything(name)
        module.__path__ = []  # type: ignore[attr-defined]
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)  # type: ignore[attr-defined]
        sys.modules[name] = module


class Sglang:
    def __init__(self) -> None:
        _stub_triton()
        from sglang.srt.server_args import ServerArgs

        self.parser = argparse.ArgumentParser(prog="sglang serve")
        ServerArgs.add_cli_args(self.parser)  # what sglang.srt.server_args.prepare_server_args builds
        self.package = "sglang"
        self.root = Path(__import__("sglang").__file__).parent

    def check(self, args: list[str]) -> list[str]:
        ns, error = _parse(self.parser, args)
        if ns is None:
            return [error]
        if ns.model_loader_extra_config and ns.model_loader_extra_config != "{}":
            return self._loader_config(ns.load_format, json.loads(ns.model_loader_extra_config))
        return []

    LOADERS = {"runai_streamer": "RunaiModelStreamerLoader"}
    """The loader class of each load format k3infra passes an extra config with."""

    def _loader_config(self, load_format: str, extra: dict[str, Any]) -> list[str]:
        """The keys the loader's constructor accepts, read from its ``allowed_keys = {...}`` in the release's
        sglang/srt/model_loader/loader.py (importing that module needs the GPU kernels)."""
        import ast

        if load_format not in self.LOADERS:
            return [f"--model-loader-extra-config: k3infra passes none with --load-format {load_format}"]
        tree = ast.parse((self.root / "srt" / "model_loader" / "loader.py").read_text())
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == self.LOADERS[load_format])
        init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        allowed = next(ast.literal_eval(n.value) for n in ast.walk(init) if isinstance(n, ast.Assign)
                       and any(isinstance(t, ast.Name) and t.id == "allowed_keys" for t in n.targets))
        unexpected = set(extra) - set(allowed)
        if unexpected:
            return [f"--model-loader-extra-config: Unexpected extra config keys for {load_format}: {unexpected}"]
        return []


def pinned_dependencies(engine: str) -> dict[str, dict[str, str | None]]:
    """Each of ``ENV_READING_DEPENDENCIES[engine]``: the version the engine's wheel pins and the one installed."""
    from importlib import metadata

    pins = {}
    for requirement in metadata.requires(engine) or ():
        name, _, rest = requirement.partition("==")
        if rest and ";" not in rest:
            pins[name.split("[")[0].strip().lower().replace("_", "-")] = rest.strip()
    out: dict[str, dict[str, str | None]] = {}
    for dist in ENV_READING_DEPENDENCIES.get(engine, ()):
        try:
            installed: str | None = metadata.version(dist)
        except metadata.PackageNotFoundError:
            installed = None
        out[dist] = {"pinned": pins.get(dist), "installed": installed}
    return out


def env_readers(engine: str) -> list[Path]:
    """The Python files of the engine's distribution and of the dependencies whose variables it is credited with."""
    from importlib import metadata

    files = []
    for dist in (engine, *ENV_READING_DEPENDENCIES.get(engine, ())):
        files += [Path(str(f.locate())) for f in metadata.files(dist) or () if f.suffix == ".py"]
    return files


def unread_env(files: list[Path], names: set[str]) -> list[str]:
    """The engine variables among ``names`` that no file in ``files`` mentions."""
    own = {n for n in names if not n.startswith(LIBRARY_ENV_PREFIXES) and n not in DRIVER_ENV}
    seen: set[str] = set()
    for f in files:
        text = f.read_text(errors="ignore")
        seen |= {n for n in own - seen if n in text}
        if seen == own:
            break
    return sorted(own - seen)


def main() -> None:
    if "--warm" in sys.argv:  # scripts/test: import both parsers once so their bytecode is written
        Vllm(), Sglang()
        return
    requests = json.load(sys.stdin)
    engines: dict[str, Any] = {}
    readers: dict[str, list[Path]] = {}
    out = []
    for r in requests:
        engine = engines.get(r["engine"])
        if engine is None:
            engine = engines[r["engine"]] = Vllm() if r["engine"] == "vllm" else Sglang()
        errors = engine.check(list(r["args"]))
        files = readers.setdefault(r["engine"], env_readers(engine.package))
        unread = unread_env(files, set(r.get("env") or ()))
        out.append({"id": r["id"], "errors": errors, "unread_env": unread})
    versions = {name: __import__(name).__version__ for name in engines}
    dependencies = {name: pinned_dependencies(name) for name in engines}
    json.dump({"versions": versions, "dependencies": dependencies, "results": out}, sys.stdout)


if __name__ == "__main__":
    main()
