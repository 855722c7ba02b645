"""``k3infra verify``: the deployment checklist of 002 §7 against a live OpenAI-compatible endpoint.

Six checks, each independent of the others' outcome so that one run shows everything that is wrong:

1. ``models``: ``GET /v1/models`` lists the served model name.
2. ``health``: ``GET /health`` answers 200.
3. ``tool-calls``: a chat request with ``tools`` comes back with a parsed ``tool_calls`` entry whose arguments
   are JSON (proves ``--enable-auto-tool-choice --tool-call-parser kimi_k3``).
4. ``reasoning``: a thinking request comes back with the reasoning separated from the answer, in
   ``reasoning_content`` (002 §7, SGLang, vLLM before 2026) or ``reasoning`` (vLLM since PR #27752; it
   dropped ``reasoning_content`` in PR #33402), proving ``--reasoning-parser kimi_k3``.
5. ``long-context``: a request of ``long_context_tokens`` prompt tokens succeeds (by default three quarters of the
   engine's max model length, at most 65,536).
6. ``prefix-cache``: the prefix-cache hit counter on ``/metrics`` moves when that prompt's prefix is sent
   again (vLLM ``vllm:prefix_cache_hits_total``, SGLang ``sglang:cached_tokens_total``).
7. ``routing`` (given two or more replicas' metrics URLs, behind an inference gateway): requests sharing a long
   prefix all land on one replica: its hit counter moves and the others' do not (a round-robin front moves two).

The chat checks go through the official ``openai`` client (its own retries with exponential backoff on
connection errors, 408, 429 and 5xx); ``/health`` and ``/metrics`` are plain HTTP with the same retry policy.
``openai`` is imported where a check runs, so the plan can size the long-context check
(``long_context_tokens``) without loading the client (about 0.9 s).
"""

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

CHECKS: tuple[str, ...] = ("models", "health", "tool-calls", "reasoning", "long-context", "prefix-cache")
"""Check names, in the order they run and print."""

ROUTING = "routing"
"""The check that runs after CHECKS when ``Settings.replica_metrics_urls`` names two or more replicas."""

ROUTING_REQUESTS = 4
"""Requests the routing check sends with one shared prefix: with two replicas, a router that ignores the prefix
(round robin) lands them on both."""

ROUTING_PREFIX_TOKENS = 8192
"""The routing check's shared prefix: long enough for whole KV blocks on any engine, short enough for any
max model length k3infra serves."""

PREFIX_CACHE_COUNTERS: tuple[str, ...] = (
    "vllm:prefix_cache_hits_total",  # vLLM V1 Counter "vllm:prefix_cache_hits" (tokens), as Prometheus exposes it
    "vllm:prefix_cache_hits",  # the same counter through exporters that keep the declared name
    "sglang:cached_tokens_total",  # SGLang: prompt tokens served from the radix cache
)
"""Prometheus counters whose increase proves a prefix-cache hit, in order of preference."""

PREFIX_CACHE_GAUGES: tuple[str, ...] = ("vllm:gpu_prefix_cache_hit_rate", "sglang:cache_hit_rate")
"""Hit-rate gauges of older vLLM (V0) and SGLang releases; used only when no counter is exposed."""

PREFILLER_HEADER = "x-prefiller-host-port"
"""The header llm-d's routing sidecar on a decode pod reads the prefill endpoint from (the endpoint picker sets it;
catalog.topologies ``ROUTER_SIDECAR``): with it, a request sent to the decode Service is prefilled on that endpoint
(a prefill pod's IP: SSRF protection refuses others), its KV moved, and decoded locally: it crosses both roles."""

LONG_CONTEXT_TOKENS = 65536
"""The long-context check's prompt where the engine's max model length leaves room for it."""

LONG_CONTEXT_SHARE = 0.75
"""Of the engine's max model length, the share the long-context prompt fills. The rest is headroom: the prompt's
length is estimated (one common word is about one token; the chat template adds its own), the request asks for 64
output tokens, and vLLM rejects a prompt longer than the max model length ("This model's maximum context length
is ...", vllm/renderers/params.py L532-544 in 0.33.0), so a healthy server with ``--max-model-len 32768`` (the
Hopper recipe) gets 24,576 words."""


def long_context_tokens(max_model_len: int | None) -> int:
    """The long-context check's prompt length for an engine whose max model length is ``max_model_len``:
    ``LONG_CONTEXT_TOKENS``, or ``LONG_CONTEXT_SHARE`` of the max model length where that is less (None: unknown,
    ``LONG_CONTEXT_TOKENS``)."""
    if not max_model_len:
        return LONG_CONTEXT_TOKENS
    return min(LONG_CONTEXT_TOKENS, int(max_model_len * LONG_CONTEXT_SHARE))


SETTLE_POLLS = 3
"""Extra /metrics reads (0.5 s, 1 s, 2 s apart) while waiting for the repeated request's hits to show."""

TOOL_NAME = "get_weather"
RAW_TOOL_MARKERS = ("<|tool_call", "tool_calls_section", "<tool_call>", "functions.")
RAW_THINK_MARKERS = ("<think>", "</think>", "◁think▷")


@dataclass(frozen=True)
class Settings:
    """What to verify and how patiently."""

    base_url: str
    """The endpoint: ``http://host:8000`` or ``http://host:8000/v1`` (both accepted)."""
    model: str
    """The served model name ``/v1/models`` must list (k3infra serves Kimi K3 as ``Kimi-K3``)."""
    api_key: str | None = None
    """Bearer token; also sent to ``/health`` and ``/metrics`` (gateways may guard them too)."""
    long_context_tokens: int | None = None
    """Approximate prompt length of the long-context request (one common word is about one token). None: sized
    from the max model length the server lists in ``/v1/models`` (``long_context_tokens``; vLLM and SGLang both
    list it)."""
    timeout: float = 300.0
    """Seconds per HTTP request (a thinking model may think for a while before it calls a tool)."""
    retries: int = 2
    """Retries after the first attempt, with exponential backoff, on connection errors, timeouts and 5xx."""
    backoff: float = 1.0
    """First backoff in seconds for ``/health`` and ``/metrics`` (doubles each retry; the ``openai`` client
    uses its own 0.5 s doubling up to 8 s)."""
    metrics_url: str | None = None
    """Where the Prometheus metrics are, when not beside the API (e.g. a pod port-forward behind a gateway)."""
    prefill_host_port: str | None = None
    """A disaggregated server's prefill endpoint (``host:port``): every request carries it in ``PREFILLER_HEADER``,
    so the decode pods' routing sidecar has it prefill each request (it then crosses both roles)."""
    replica_metrics_urls: tuple[str, ...] = ()
    """Each replica's own ``/metrics`` URL (port-forwards to the leaders behind a gateway): with two or more, the
    ``routing`` check runs."""

    @property
    def root(self) -> str:
        """The server root (no ``/v1``, no trailing slash)."""
        url = self.base_url.rstrip("/")
        return url[: -len("/v1")] if url.endswith("/v1") else url

    @property
    def api_base(self) -> str:
        """The ``/v1`` base the ``openai`` client talks to."""
        return f"{self.root}/v1"


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check."""

    name: str
    passed: bool
    evidence: str
    """What was observed: the values that decided it, and on failure the likely cause."""
    seconds: float


@dataclass
class Report:
    """All checks of one run."""

    base_url: str
    model: str
    checks: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when every check passed."""
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[str]:
        """Names of the checks that failed."""
        return [c.name for c in self.checks if not c.passed]

    def to_json(self) -> dict[str, Any]:
        """``--format json``."""
        return {"baseUrl": self.base_url, "model": self.model, "passed": self.passed, "failed": self.failed,
                "checks": [asdict(c) for c in self.checks]}


class CheckFailed(Exception):
    """A check's verdict: failed, with the evidence."""


# ---------------------------------------------------------------------------------------------------------
# plain HTTP with retries (health, metrics)


def _http_get(url: str, s: Settings, sleep: Callable[[float], None] = time.sleep) -> tuple[int, str]:
    """GET with retries and exponential backoff on connection errors, timeouts and 5xx; returns (status, body)."""
    headers = {"Authorization": f"Bearer {s.api_key}"} if s.api_key else {}
    last = ""
    for attempt in range(s.retries + 1):
        if attempt:
            sleep(s.backoff * 2 ** (attempt - 1))
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=s.timeout) as r:
                return r.status, r.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            body = e.read().decode("utf-8", "replace")
            if e.code < 500:
                return e.code, body
            last = f"HTTP {e.code} {_short(body)}".strip()
        except TimeoutError:
            last = f"timed out after {s.timeout:g} s"
        except urllib.error.URLError as e:
            last = f"timed out after {s.timeout:g} s" if isinstance(e.reason, TimeoutError) else f"cannot connect: {e.reason}"
        except OSError as e:
            last = f"connection failed: {e}"
    raise CheckFailed(f"GET {url}: {last} ({s.retries + 1} attempt(s))")


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text exposition → metric name to the sum of its samples over all label sets."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+(\S+)", line)
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        out[m.group(1)] = out.get(m.group(1), 0.0) + value
    return out


def cache_reading(metrics: dict[str, float]) -> tuple[str, float] | None:
    """The prefix-cache hit metric present on this server and its value (a counter when there is one)."""
    for name in (*PREFIX_CACHE_COUNTERS, *PREFIX_CACHE_GAUGES):
        if name in metrics:
            return name, metrics[name]
    return None


# ---------------------------------------------------------------------------------------------------------
# the checks


def _short(text: Any, n: int = 120) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _api_error(e: Exception, s: Settings) -> str:
    import openai

    if isinstance(e, openai.APITimeoutError):
        return f"timed out after {s.timeout:g} s ({s.retries + 1} attempt(s))"
    if isinstance(e, openai.APIStatusError):
        detail = e.body.get("message", e.body) if isinstance(e.body, dict) else e.message
        return f"HTTP {e.status_code}: {_short(detail, 200)}"
    if isinstance(e, openai.APIConnectionError):
        return f"cannot connect to {s.api_base} ({s.retries + 1} attempt(s)): {_short(e.__cause__ or e)}"
    return f"{type(e).__name__}: {_short(e, 200)}"


def _extra(obj: Any, name: str) -> Any:
    """A field the OpenAI schema does not declare (vLLM and SGLang add them); None when absent."""
    value = getattr(obj, name, None)
    if value is None:
        value = (getattr(obj, "model_extra", None) or {}).get(name)
    return value


class Verifier:
    """Runs the checks against one endpoint."""

    def __init__(self, s: Settings, sleep: Callable[[float], None] = time.sleep) -> None:
        from openai import OpenAI

        self.s = s
        self.sleep = sleep
        headers = {PREFILLER_HEADER: s.prefill_host_port} if s.prefill_host_port else None
        self.client = OpenAI(base_url=s.api_base, api_key=s.api_key or "not-needed", timeout=s.timeout,
                             max_retries=s.retries, default_headers=headers)
        self.max_model_len: int | None = None
        self.long_prefix: str | None = None
        """The long-context prompt's prefix, when that request succeeded (reused by prefix-cache)."""

    def run(self, only: tuple[str, ...] = CHECKS) -> Report:
        """Every check (or those named in ``only``), in order; never raises for a failing endpoint."""
        import openai

        report = Report(base_url=self.s.base_url, model=self.s.model)
        steps: dict[str, Callable[[], str]] = {
            "models": self.models, "health": self.health, "tool-calls": self.tool_calls,
            "reasoning": self.reasoning, "long-context": self.long_context, "prefix-cache": self.prefix_cache,
        }
        for name in CHECKS:
            if name not in only:
                continue
            start = time.monotonic()
            try:
                evidence, passed = steps[name](), True
            except CheckFailed as e:
                evidence, passed = str(e), False
            except openai.OpenAIError as e:
                evidence, passed = _api_error(e, self.s), False
            except Exception as e:  # noqa: BLE001 - a malformed answer is a failed check, not a crash
                evidence, passed = f"unexpected answer: {type(e).__name__}: {_short(e, 200)}", False
            report.checks.append(CheckResult(name, passed, evidence, round(time.monotonic() - start, 3)))
        return report

    def run_all(self) -> Report:
        """CHECKS, then ``routing`` where two or more replicas' metrics are given."""
        import openai

        report = self.run()
        if len(self.s.replica_metrics_urls) < 2:
            return report
        start = time.monotonic()
        try:
            evidence, passed = self.routing(), True
        except CheckFailed as e:
            evidence, passed = str(e), False
        except openai.OpenAIError as e:
            evidence, passed = _api_error(e, self.s), False
        report.checks.append(CheckResult(ROUTING, passed, evidence, round(time.monotonic() - start, 3)))
        return report

    def models(self) -> str:
        """/v1/models lists the served model name."""
        listed = list(self.client.models.list())
        ids = [m.id for m in listed]
        for m in listed:
            if m.id == self.s.model:
                mml = _extra(m, "max_model_len")
                self.max_model_len = int(mml) if isinstance(mml, (int, float)) else None
                return f"{self.s.model} listed" + (f" (max_model_len {self.max_model_len:,})" if self.max_model_len else "")
        raise CheckFailed(f"{self.s.model!r} is not listed; /v1/models has {ids or 'no models'} "
                          "(check --served-model-name)")

    def health(self) -> str:
        """/health answers 200."""
        url = f"{self.s.root}/health"
        status, body = _http_get(url, self.s, self.sleep)
        if status != 200:
            raise CheckFailed(f"GET {url}: HTTP {status} {_short(body)}".rstrip())
        return "GET /health: HTTP 200" + (f" {_short(body, 60)}" if body.strip() else "")

    def tool_calls(self) -> str:
        """A request with ``tools`` returns a parsed tool call with JSON arguments."""
        r = self.client.chat.completions.create(
            model=self.s.model,
            messages=[{"role": "user", "content": "What is the weather in Paris right now? Use the get_weather tool."}],
            tools=[{
                "type": "function",
                "function": {
                    "name": TOOL_NAME,
                    "description": "Get the current weather for a city.",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                },
            }],
            # "auto" is what exercises the tool-call parser: "required" and named tool choices are served by
            # structured decoding and would pass even without --tool-call-parser.
            tool_choice="auto",
            max_tokens=4096,
            temperature=0,
        )
        choice = r.choices[0]
        msg = choice.message
        calls = msg.tool_calls or []
        if not calls:
            content = msg.content or ""
            hint = (" - the call came back as raw text: check --enable-auto-tool-choice --tool-call-parser kimi_k3"
                    if any(k in content for k in RAW_TOOL_MARKERS) else "")
            raise CheckFailed(f"no tool_calls (finish_reason {choice.finish_reason}); content: "
                              f"{_short(content, 100)!r}{hint}")
        fn = getattr(calls[0], "function", None)
        if fn is None:
            raise CheckFailed(f"tool_calls[0] is not a function call: {_short(calls[0], 100)}")
        try:
            args = json.loads(fn.arguments or "")
        except ValueError:
            raise CheckFailed(f"{fn.name} arguments are not JSON: {_short(fn.arguments, 100)!r}") from None
        if not isinstance(args, dict):
            raise CheckFailed(f"{fn.name} arguments are not a JSON object: {_short(fn.arguments, 100)!r}")
        if fn.name != TOOL_NAME:
            raise CheckFailed(f"called {fn.name!r}, not {TOOL_NAME!r}")
        return f"{fn.name}({json.dumps(args, ensure_ascii=False)}), finish_reason {choice.finish_reason}"

    def reasoning(self) -> str:
        """A thinking request returns the reasoning in ``reasoning_content`` (or vLLM's newer ``reasoning``)."""
        r = self.client.chat.completions.create(
            model=self.s.model,
            messages=[{"role": "user", "content": "What is 17 * 23? Think it through, then answer with the number."}],
            max_tokens=2048,
            # Kimi K3 thinks by default (002 §1); the chat-template switch is sent anyway, templates ignore
            # kwargs they do not use.
            extra_body={"chat_template_kwargs": {"thinking": True}},
        )
        msg = r.choices[0].message
        for field_name in ("reasoning_content", "reasoning"):
            value = _extra(msg, field_name)
            if isinstance(value, str) and value.strip():
                return f"{field_name}: {len(value):,} chars; content: {len(msg.content or ''):,} chars"
        content = msg.content or ""
        hint = (" - the thinking came back inside the content: check --reasoning-parser kimi_k3"
                if any(k in content for k in RAW_THINK_MARKERS) else "")
        raise CheckFailed(f"no reasoning_content (nor reasoning) in the message; content: {_short(content, 100)!r}{hint}")

    def _prompt(self, tokens: int, nonce: str) -> str:
        words = ("river", "stone", "garden", "window", "silver", "market", "winter", "yellow", "bridge", "candle",
                 "forest", "orange", "pocket", "letter", "mirror", "planet", "harbor", "meadow", "violet", "copper")
        x = 12345
        body = []
        for _ in range(max(tokens - 64, 16)):
            x = (x * 1103515245 + 12345) % 2**31
            body.append(words[x % len(words)])
        return f"Verification run {nonce}. Here is a long list of words.\n" + " ".join(body)

    def _ask(self, prefix: str, question: str) -> Any:
        return self.client.chat.completions.create(
            model=self.s.model,
            messages=[{"role": "user", "content": f"{prefix}\n\n{question}"}],
            max_tokens=64,
            temperature=0,
        )

    def long_context(self) -> str:
        """A request of about ``long_context_tokens`` prompt tokens succeeds (by default sized from the server's
        max model length, which the ``models`` check reads)."""
        n = self.s.long_context_tokens or long_context_tokens(self.max_model_len)
        prefix = self._prompt(n, uuid.uuid4().hex)
        r = self._ask(prefix, "How many times does the word 'river' appear above? Answer with a number.")
        if not r.choices:
            raise CheckFailed("the long-context request returned no choices")
        used = r.usage.prompt_tokens if r.usage else None
        if used is not None and used < n // 2:
            raise CheckFailed(f"prompt_tokens {used:,} for a ~{n:,}-token prompt: the request was truncated on the way")
        self.long_prefix = prefix
        limit = f" of max_model_len {self.max_model_len:,}" if self.max_model_len else ""
        return (f"prompt_tokens {used:,}" if used is not None else f"~{n:,} prompt tokens") + \
            f"{limit}, finish_reason {r.choices[0].finish_reason}"

    def routing(self) -> str:
        """Requests sharing a long prefix land on one replica: its hit counter moves, no other's does."""
        urls = self.s.replica_metrics_urls
        before = [self._metrics(u)[1] for u in urls]
        prefix = self._prompt(ROUTING_PREFIX_TOKENS, uuid.uuid4().hex)
        for i in range(ROUTING_REQUESTS):
            self._ask(prefix, f"Answer with word number {i + 1} of the list.")
        moved = [self._metrics(u)[1] - b for u, b in zip(urls, before)]
        for attempt in range(SETTLE_POLLS):  # stats land just after the response (prefix_cache)
            if any(moved):
                break
            self.sleep(0.5 * 2**attempt)
            moved = [self._metrics(u)[1] - b for u, b in zip(urls, before)]
        seen = ", ".join(f"replica {i + 1} +{d:,.0f}" for i, d in enumerate(moved))
        hit = [i for i, d in enumerate(moved) if d > 0]
        if len(hit) == 1:
            return f"{ROUTING_REQUESTS} requests with one {ROUTING_PREFIX_TOKENS:,}-token prefix: {seen}"
        if not hit:
            raise CheckFailed(f"no replica's prefix-cache counter moved ({seen}): are these the replicas behind "
                              f"{self.s.base_url}?")
        raise CheckFailed(f"one shared prefix hit {len(hit)} replicas ({seen}): the front does not route by prefix "
                          "(a plain Service, or the picker failing open to round robin)")

    def _metrics(self, url: str | None = None) -> tuple[str, float]:
        url = url or self.s.metrics_url or f"{self.s.root}/metrics"
        status, body = _http_get(url, self.s, self.sleep)
        if status != 200:
            raise CheckFailed(f"GET {url}: HTTP {status} {_short(body)}".rstrip())
        reading = cache_reading(parse_metrics(body))
        if reading is None:
            raise CheckFailed(f"{url} has no prefix-cache metric (looked for "
                              f"{', '.join((*PREFIX_CACHE_COUNTERS, *PREFIX_CACHE_GAUGES))}): "
                              "is prefix caching on (vLLM --enable-prefix-caching) and metrics enabled (SGLang --enable-metrics)?")
        return reading

    def prefix_cache(self) -> str:
        """The hit counter on /metrics moves when a prompt prefix is sent a second time."""
        prefix, note = self.long_prefix, ""
        if prefix is None:
            # the long request failed: prove caching with a prompt the server surely accepts
            prefix, note = self._prompt(4096, uuid.uuid4().hex), " (4,096-token prefix: the long-context request failed)"
            self._ask(prefix, "Answer with the first word of the list.")
        name, before = self._metrics()
        r = self._ask(prefix, "Answer with the last word of the list.")
        # Engines publish a request's stats just after the response: poll for a few seconds before judging.
        name_after, after = self._metrics()
        for attempt in range(SETTLE_POLLS):
            if after > before:
                break
            self.sleep(0.5 * 2**attempt)
            name_after, after = self._metrics()
        details = getattr(r.usage, "prompt_tokens_details", None) if r.usage else None
        cached = getattr(details, "cached_tokens", None) if details else None
        seen = f"{name} {before:,.0f} → {after:,.0f}" if name == name_after else f"{name} {before} → {name_after} {after}"
        extra = f"; usage.cached_tokens {cached:,}" if isinstance(cached, int) else ""
        if after <= before:
            raise CheckFailed(f"{seen} on a repeated prefix: no prefix-cache hit (is --enable-prefix-caching set?){extra}{note}")
        return f"{seen} (+{after - before:,.0f}) on the repeated prefix{extra}{note}"


def verify(s: Settings, sleep: Callable[[float], None] = time.sleep) -> Report:
    """Run the whole checklist against ``s.base_url`` (and ``routing`` over the replicas' metrics, if given)."""
    if urllib.parse.urlparse(s.base_url).scheme not in ("http", "https"):
        raise ValueError(f"--base-url {s.base_url!r}: expected http(s)://host[:port][/v1]")
    return Verifier(s, sleep).run_all()


__all__ = ["CHECKS", "ROUTING", "CheckResult", "LONG_CONTEXT_SHARE", "LONG_CONTEXT_TOKENS", "PREFIX_CACHE_COUNTERS", "Report",
           "Settings", "Verifier", "cache_reading", "long_context_tokens", "parse_metrics", "verify"]
