"""Every variable k3infra sets to keep an engine's compile and JIT caches on the node (catalog.engines ``cache_env``)
is one the pinned engine or a package it pins reads: found in their installed source in .engines-venv."""

import subprocess
from pathlib import Path

import pytest

from k3infra.catalog import EngineName
from k3infra.catalog.engines import ENGINES
from tests.engines.test_parsers import engines_python

# where each engine's cache variables are read: the engine and the packages it pins that keep a cache
READERS = {
    EngineName.VLLM: ("vllm", "flashinfer", "tvm_ffi", "torch/_inductor"),
    EngineName.SGLANG: ("sglang", "flashinfer", "tvm_ffi", "torch/_inductor"),
}

DRIVER_READS = {"CUDA_CACHE_PATH"}
"""Read by the CUDA driver, not by Python source: its PTX JIT cache (CUDA C++ Programming Guide, CUDA Environment
Variables)."""


def _site_packages() -> Path:
    out = subprocess.run([engines_python(), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return Path(out)


def _unread(engine: EngineName, names: list[str]) -> list[str]:
    site = _site_packages()
    dirs = [str(site / d) for d in READERS[engine]]
    return [n for n in names if subprocess.run(["grep", "-rqs", "--include=*.py", "-F", n, *dirs]).returncode != 0]


@pytest.mark.parametrize("engine", sorted(READERS))
def test_every_cache_variable_is_read_by_the_pinned_engine_or_its_dependencies(engine: EngineName) -> None:
    assert _unread(engine, sorted(set(ENGINES[engine].cache_env) - DRIVER_READS)) == []


def test_a_variable_nothing_reads_is_found_out() -> None:
    assert _unread(EngineName.VLLM, ["VLLM_CACHE_ROOT", "K3_NOBODY_READS_THIS_CACHE_DIR"]) == [
        "K3_NOBODY_READS_THIS_CACHE_DIR"]
