"""A tiny OpenAI-compatible server (stdlib http.server in a thread) that behaves like vLLM serving Kimi K3,
or breaks in one chosen way, for the ``k3infra verify`` tests."""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "Kimi-K3"
MAX_MODEL_LEN = 262144

FAULTS = ("models", "health", "tool-calls", "reasoning", "long-context", "prefix-cache")
"""One fault per check: the server breaks exactly what that check proves."""


@dataclass
class State:
    """What the server does and what it has seen."""

    faults: set[str] = field(default_factory=set)
    api_key: str | None = None
    reasoning_field: str = "reasoning_content"
    unhealthy_first: int = 0
    """Answer /health with 503 this many times before 200 (a pod still starting)."""
    hang_seconds: float = 0.0
    """Sleep this long before every chat answer (to exercise the client timeout)."""
    long_limit: int = 8192
    """With the long-context fault: the context length the server rejects beyond (while listing ``max_model_len``)."""
    max_model_len: int = MAX_MODEL_LEN
    """The max model length the server lists and enforces on prompt plus ``max_tokens``, as vLLM does."""
    engine: str = "vllm"
    """Whose metric names /metrics exposes: vllm or sglang."""
    cache_hits: int = 0
    seen_prefixes: set[str] = field(default_factory=set)
    health_calls: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    prefillers: list[str | None] = field(default_factory=list)
    """Each chat request's ``x-prefiller-host-port`` header (what a decode pod's routing sidecar reads)."""
    lock: threading.Lock = field(default_factory=threading.Lock)


def _completion(message: dict[str, Any], prompt_tokens: int, finish: str = "stop", cached: int = 0) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 8, "total_tokens": prompt_tokens + 8,
                  "prompt_tokens_details": {"cached_tokens": cached}},
    }


class Handler(BaseHTTPRequestHandler):
    state: State  # set on the subclass per server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def _send(self, code: int, body: Any, content_type: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        st = self.state
        if st.api_key and self.headers.get("Authorization") != f"Bearer {st.api_key}":
            self._send(401, {"error": {"message": "Unauthorized", "type": "invalid_request_error", "code": 401}})
            return False
        return True

    def do_GET(self) -> None:  # noqa: N802
        st = self.state
        if self.path == "/health":
            with st.lock:
                st.health_calls += 1
                starting = st.health_calls <= st.unhealthy_first
            if "health" in st.faults or starting:
                self._send(503, {"detail": "engine not ready"})
            else:
                self._send(200, "", "text/plain")
        elif self.path == "/metrics":
            if st.engine == "sglang":  # SGLang 0.5.23's name (schemas/engine-metrics/sglang-0.5.23.json)
                lines = ["# TYPE sglang:cached_tokens_total counter",
                         f'sglang:cached_tokens_total{{model_name="{MODEL}",tp_rank="0"}} {float(st.cache_hits)}']
            else:
                lines = [
                    "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.",
                    "# TYPE vllm:prefix_cache_hits_total counter",
                    f'vllm:prefix_cache_hits_total{{engine="0",model_name="{MODEL}"}} {float(st.cache_hits)}',
                    f'vllm:prefix_cache_hits_total{{engine="1",model_name="{MODEL}"}} 0.0',
                    f'vllm:prefix_cache_hits_created{{engine="0",model_name="{MODEL}"}} 1.7e9',
                ]
            self._send(200, "\n".join(lines) + "\n", "text/plain; version=0.0.4")
        elif self.path == "/v1/models":
            if not self._authorized():
                return
            served = "kimi-k3-wrong-name" if "models" in st.faults else MODEL
            self._send(200, {"object": "list", "data": [
                {"id": served, "object": "model", "created": 0, "owned_by": "vllm", "max_model_len": st.max_model_len}]})
        else:
            self._send(404, {"detail": "Not Found"})

    def do_POST(self) -> None:  # noqa: N802
        st = self.state
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path != "/v1/chat/completions":
            self._send(404, {"detail": "Not Found"})
            return
        if not self._authorized():
            return
        with st.lock:
            st.requests.append(body)
            st.prefillers.append(self.headers.get("x-prefiller-host-port"))
        if st.hang_seconds:
            time.sleep(st.hang_seconds)
        if body.get("model") != MODEL:
            self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist.", "code": 404}})
            return
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        prompt_tokens = len(text.split())
        if body.get("tools"):
            if "tool-calls" in st.faults:  # no --tool-call-parser: the call stays in the text
                raw = ('<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0'
                       '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>')
                self._send(200, _completion({"content": raw}, prompt_tokens))
            else:
                call = {"id": "call-1", "type": "function",
                        "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}
                self._send(200, _completion({"content": None, "tool_calls": [call]}, prompt_tokens, "tool_calls"))
            return
        limit = st.long_limit if "long-context" in st.faults else st.max_model_len
        if prompt_tokens + body.get("max_tokens", 0) > limit:
            self._send(400, {"object": "error", "type": "BadRequestError", "code": 400, "message":
                             f"This model's maximum context length is {limit} tokens. However, you requested "
                             f"{prompt_tokens + body.get('max_tokens', 0)} tokens in the messages. Please reduce the length."})
            return
        if "17 * 23" in text:
            if "reasoning" in st.faults:  # no --reasoning-parser: the thinking stays in the content
                self._send(200, _completion({"content": "<think>17 * 23 = 391</think>391"}, prompt_tokens))
            else:
                self._send(200, _completion({"content": "391", st.reasoning_field: "17 * 20 = 340, 17 * 3 = 51, 391."},
                                            prompt_tokens))
            return
        key = text[:200]
        cached = 0
        with st.lock:
            if key in st.seen_prefixes and "prefix-cache" not in st.faults:
                cached = (prompt_tokens - 32) // 16 * 16  # whole blocks of the shared prefix
                st.cache_hits += cached
            st.seen_prefixes.add(key)
        self._send(200, _completion({"content": "river"}, prompt_tokens, "stop", cached))


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up is expected in the timeout test


class FakeServer:
    """Start with ``with FakeServer(...) as srv:``; ``srv.url`` is the base URL."""

    def __init__(self, *faults: str, **settings: Any) -> None:
        unknown = set(faults) - set(FAULTS)
        assert not unknown, unknown
        self.state = State(faults=set(faults), **settings)
        handler = type("BoundHandler", (Handler,), {"state": self.state})
        self.httpd = _QuietServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "FakeServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class FakeRouter:
    """A front for several FakeServers (``with FakeRouter(a, b, policy=...) as r:``): ``prefix`` sends a request to
    the backend its prompt's first 200 characters hash to (what the gateway's prefix scorer achieves), ``round-robin``
    to each backend in turn (a plain Service, or a picker failing open)."""

    def __init__(self, *backends: FakeServer, policy: str = "prefix") -> None:
        assert policy in ("prefix", "round-robin"), policy
        self.backends, self.policy, self.turn = backends, policy, 0
        router = self

        class Forward(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                pass

            def _forward(self, body: bytes | None) -> None:
                import urllib.error
                import urllib.request
                target = router.pick(body)
                req = urllib.request.Request(target.url + self.path, data=body, method=self.command,
                                             headers={k: v for k, v in self.headers.items() if k.lower() != "host"})
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        code, data, ctype = r.status, r.read(), r.headers.get("Content-Type", "application/json")
                except urllib.error.HTTPError as e:
                    code, data, ctype = e.code, e.read(), e.headers.get("Content-Type", "application/json")
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._forward(None)

            def do_POST(self) -> None:  # noqa: N802
                self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

        self.httpd = _QuietServer(("127.0.0.1", 0), Forward)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def pick(self, body: bytes | None) -> FakeServer:
        """The backend of one request under the policy."""
        if self.policy == "prefix" and body:
            import zlib
            text = "\n".join(str(m.get("content", "")) for m in json.loads(body).get("messages", []))
            return self.backends[zlib.crc32(text[:200].encode()) % len(self.backends)]
        self.turn += 1
        return self.backends[(self.turn - 1) % len(self.backends)]

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "FakeRouter":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
