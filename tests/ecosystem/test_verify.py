"""``k3infra verify`` against a local OpenAI-compatible server: correct, and broken in each way 002 §7 checks."""

import json

import pytest
from typer.testing import CliRunner

from k3infra import verify as v
from k3infra.cli import app

from .fake_openai import FAULTS, MODEL, FakeServer

FAST = {"long_context_tokens": 20000, "timeout": 10.0, "retries": 1, "backoff": 0.01}


def run(srv: FakeServer, **kw: object) -> v.Report:
    settings = v.Settings(**{"base_url": srv.url, "model": MODEL, **FAST, **kw})  # type: ignore[arg-type]
    return v.Verifier(settings, sleep=lambda _s: None).run()


def evidence(report: v.Report) -> dict[str, str]:
    return {c.name: c.evidence for c in report.checks}


def test_correct_server_passes_every_check_with_evidence() -> None:
    with FakeServer() as srv:
        report = run(srv)
        sent = srv.state.requests
    assert [c.name for c in report.checks] == list(v.CHECKS)
    assert report.passed, report.to_json()
    ev = evidence(report)
    assert ev["models"] == "Kimi-K3 listed (max_model_len 262,144)"
    assert ev["health"] == "GET /health: HTTP 200"
    assert ev["tool-calls"] == 'get_weather({"city": "Paris"}), finish_reason tool_calls'
    assert ev["reasoning"].startswith("reasoning_content: ")
    assert ev["long-context"].startswith("prompt_tokens 19,9") and "of max_model_len 262,144" in ev["long-context"]
    assert ev["prefix-cache"].startswith("vllm:prefix_cache_hits_total 0 → 19,9"), ev["prefix-cache"]
    assert "usage.cached_tokens 19,9" in ev["prefix-cache"]
    # the tool request leaves the choice to the parser ("required" would bypass it), the thinking request
    # asks for thinking, and the two long requests share their prefix
    tools_req = next(r for r in sent if r.get("tools"))
    assert tools_req["tool_choice"] == "auto"
    assert any(r.get("chat_template_kwargs") == {"thinking": True} for r in sent)
    long_reqs = [r["messages"][0]["content"] for r in sent if len(r["messages"][0]["content"]) > 50000]
    assert len(long_reqs) == 2 and long_reqs[0].split("\n\n")[0] == long_reqs[1].split("\n\n")[0]


HINTS = {
    "models": "'Kimi-K3' is not listed; /v1/models has ['kimi-k3-wrong-name'] (check --served-model-name)",
    "health": "HTTP 503",
    "tool-calls": "check --enable-auto-tool-choice --tool-call-parser kimi_k3",
    "reasoning": "check --reasoning-parser kimi_k3",
    "long-context": "HTTP 400: This model's maximum context length is 8192 tokens",
    "prefix-cache": "no prefix-cache hit (is --enable-prefix-caching set?)",
}


@pytest.mark.parametrize("fault", FAULTS)
def test_each_broken_server_fails_exactly_its_check_and_says_what_to_fix(fault: str) -> None:
    with FakeServer(fault) as srv:
        report = run(srv)
    assert report.failed == [fault], report.to_json()
    assert HINTS[fault] in evidence(report)[fault]


def test_prefix_cache_falls_back_to_a_short_prefix_when_long_context_fails() -> None:
    with FakeServer("long-context") as srv:
        report = run(srv)
    ev = evidence(report)["prefix-cache"]
    assert "(4,096-token prefix: the long-context request failed)" in ev and "+" in ev


def test_newer_vllm_reasoning_field_is_accepted() -> None:
    """vLLM renamed reasoning_content to reasoning (PR #27752) and then dropped the old name (PR #33402)."""
    with FakeServer(reasoning_field="reasoning") as srv:
        report = run(srv)
    assert report.passed
    assert evidence(report)["reasoning"].startswith("reasoning: ")


def test_health_is_retried_with_exponential_backoff() -> None:
    sleeps: list[float] = []
    with FakeServer(unhealthy_first=2) as srv:
        settings = v.Settings(base_url=srv.url + "/v1", model=MODEL, retries=2, backoff=0.5, timeout=5)
        report = v.Verifier(settings, sleep=sleeps.append).run(only=("health",))
    assert report.passed and sleeps == [0.5, 1.0]


def test_health_gives_up_after_the_retries() -> None:
    with FakeServer(unhealthy_first=5) as srv:
        settings = v.Settings(base_url=srv.url, model=MODEL, retries=1, backoff=0.0, timeout=5)
        report = v.Verifier(settings, sleep=lambda _s: None).run(only=("health",))
    assert report.failed == ["health"]
    assert report.checks[0].evidence.endswith("HTTP 503 {\"detail\": \"engine not ready\"} (2 attempt(s))")


def test_a_hanging_server_times_out() -> None:
    with FakeServer(hang_seconds=1.5) as srv:
        settings = v.Settings(base_url=srv.url, model=MODEL, retries=0, timeout=0.3)
        report = v.Verifier(settings, sleep=lambda _s: None).run(only=("models", "tool-calls"))
    assert report.failed == ["tool-calls"]
    assert report.checks[1].evidence == "timed out after 0.3 s (1 attempt(s))"
    assert report.checks[1].seconds < 1.5


def test_api_key_is_sent_and_required() -> None:
    with FakeServer(api_key="s3cret") as srv:
        without = run(srv)
        with_key = run(srv, api_key="s3cret")
    assert without.failed == ["models", "tool-calls", "reasoning", "long-context", "prefix-cache"]
    assert evidence(without)["models"].startswith("HTTP 401")
    assert with_key.passed


def test_unreachable_endpoint_fails_every_check() -> None:
    settings = v.Settings(base_url="http://127.0.0.1:9", model=MODEL, retries=0, timeout=2)
    report = v.Verifier(settings, sleep=lambda _s: None).run()
    assert report.failed == list(v.CHECKS)
    assert "cannot connect" in evidence(report)["models"]


def test_parse_metrics_sums_label_sets_and_finds_sglang() -> None:
    text = ('# TYPE sglang:cached_tokens_total counter\n'
            'sglang:cached_tokens_total{model_name="Kimi-K3",cache_source="device"} 100.0\n'
            'sglang:cached_tokens_total{model_name="Kimi-K3",cache_source="host"} 2.5e1\n'
            'sglang:cache_hit_rate{model_name="Kimi-K3"} 0.5\n')
    m = v.parse_metrics(text)
    assert m["sglang:cached_tokens_total"] == 125.0
    assert v.cache_reading(m) == ("sglang:cached_tokens_total", 125.0)
    assert v.cache_reading({"vllm:gpu_prefix_cache_hit_rate": 0.1}) == ("vllm:gpu_prefix_cache_hit_rate", 0.1)
    assert v.cache_reading({"vllm:num_requests_running": 1}) is None


def test_cli_table_and_exit_codes() -> None:
    runner = CliRunner()
    with FakeServer() as srv:
        ok = runner.invoke(app, ["verify", "--base-url", srv.url, "--model", MODEL, "--long-context-tokens", "5000"])
    assert ok.exit_code == 0, ok.output
    assert ok.output.count("PASS") == 6 and "all checks passed" in ok.output

    with FakeServer("tool-calls") as srv:
        bad = runner.invoke(app, ["verify", "--base-url", srv.url, "--model", MODEL, "--long-context-tokens",
                                  "5000", "--format", "json"])
    assert bad.exit_code == 1
    doc = json.loads(bad.stdout)
    assert doc["passed"] is False and doc["failed"] == ["tool-calls"]
    assert [c["name"] for c in doc["checks"]] == list(v.CHECKS)

    wrong = runner.invoke(app, ["verify", "--base-url", "ftp://x", "--model", MODEL])
    assert wrong.exit_code == 2 and "expected http(s)://" in wrong.output


def test_the_long_context_prompt_is_sized_below_the_engines_max_model_len() -> None:
    """Alibaba review M2: the Hopper recipe's --max-model-len 32768 rejected the fixed 65,536-token prompt."""
    assert v.long_context_tokens(32768) == 24576
    assert v.long_context_tokens(1_048_576) == v.long_context_tokens(None) == v.LONG_CONTEXT_TOKENS == 65536
    assert v.long_context_tokens(65536 + 100) == int((65536 + 100) * 0.75)


def test_by_default_a_healthy_server_with_a_short_context_passes() -> None:
    """No --long-context-tokens: the prompt comes from the max_model_len /v1/models lists (here 32,768)."""
    with FakeServer(max_model_len=32768) as srv:
        settings = v.Settings(base_url=srv.url, model=MODEL, timeout=10.0, retries=0)
        report = v.Verifier(settings, sleep=lambda _s: None).run()
        sent = [r for r in srv.state.requests if "long list of words" in r["messages"][0]["content"]]
    assert report.passed, report.to_json()
    assert evidence(report)["long-context"].startswith("prompt_tokens 24,5") and "of max_model_len 32,768" in \
        evidence(report)["long-context"]
    assert sent and all(len(r["messages"][0]["content"].split()) <= 24576 for r in sent)
    # the old fixed 65,536 fails the same healthy server
    with FakeServer(max_model_len=32768) as srv:
        fixed = v.Verifier(v.Settings(base_url=srv.url, model=MODEL, long_context_tokens=65536, timeout=10.0,
                                      retries=0), sleep=lambda _s: None).run(only=("models", "long-context"))
    assert fixed.failed == ["long-context"]


def test_the_cli_default_sizes_the_prompt_from_the_server() -> None:
    with FakeServer(max_model_len=32768) as srv:
        r = CliRunner().invoke(app, ["verify", "--base-url", srv.url, "--model", MODEL, "--format", "json"])
    assert r.exit_code == 0, r.output
    long = next(c for c in json.loads(r.stdout)["checks"] if c["name"] == "long-context")
    assert long["passed"] and "of max_model_len 32,768" in long["evidence"]
