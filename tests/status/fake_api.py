"""A stand-in Kubernetes API on loopback for the CLI tests that need no control plane: GET only, answering the
paths it is given (anything else 404), and recording each request's path and bearer token."""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def fake_api(answers: dict[str, Any]) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """``(server URL, requests seen)`` while serving ``answers`` (path to JSON body)."""
    seen: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            path = self.path.split("?")[0]
            seen.append((path, self.headers.get("Authorization", "")))
            body = answers.get(path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(body if body is not None else {"kind": "Status", "code": 404}).encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def kubeconfig(server: str, token: str) -> dict[str, Any]:
    """A kubeconfig with one context, a bearer token, and the plain-HTTP server."""
    return {"apiVersion": "v1", "kind": "Config", "current-context": "k3",
            "clusters": [{"name": "k3", "cluster": {"server": server}}],
            "users": [{"name": "k3", "user": {"token": token}}],
            "contexts": [{"name": "k3", "context": {"cluster": "k3", "user": "k3"}}]}
