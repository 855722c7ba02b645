"""Serves a Pulumi program to the real CLI: ``pulumi preview|up --client 127.0.0.1:PORT`` runs it here.

The program runs in this process through the Python SDK's own language runtime server, the one
``pulumi.automation`` starts for an inline program (``pulumi.automation._server.LanguageServer``: it sets the
run's settings and config from the engine's RunRequest, then runs the program in a stack, as
``pulumi-language-python-exec`` does). The Go language host ``pulumi-language-python`` would do the same from a
subprocess, but the Go module proxy does not serve its module (github.com/pulumi/pulumi/sdk/python/cmd/
pulumi-language-python/v3, refused at every version), so this host stands in for it and nothing else does:
the CLI, the engine, the state, the secrets provider and the Kubernetes provider are the real ones.

    python program_host.py PATH/__main__.py     # a project's entry point
    python program_host.py package.module:func  # a function (the tests' small programs)

Prints the port, then serves until it is terminated.
"""

import importlib
import runpy
import sys
from concurrent import futures
from pathlib import Path
from typing import Callable

import grpc
from pulumi.automation._server import LanguageServer
from pulumi.runtime.proto import language_pb2_grpc

MAX_MESSAGE = 2**31 - 1  # as pulumi.automation's own server (_GRPC_CHANNEL_OPTIONS)


def program_of(target: str) -> Callable[[], None]:
    """The program named by ``target``: a file run as ``__main__``, or ``module:function``."""
    if target.endswith(".py"):
        path = Path(target).resolve()
        sys.path.insert(0, str(path.parent))
        return lambda: runpy.run_path(str(path), run_name="__main__") and None
    module, _, func = target.partition(":")
    return getattr(importlib.import_module(module), func)


def main() -> None:
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                         options=[("grpc.max_receive_message_length", MAX_MESSAGE)])
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(LanguageServer(program_of(sys.argv[1])), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
