"""OpenAI backend logic against a scripted loopback HTTP endpoint: retries, missing choices, errors.

The real vLLM server is exercised in tests/integration/test_vllm_backends.py; here a tiny server
answers in the OpenAI wire format so failure modes can be produced on demand.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from codea1_eval.models import GenerationRequest, SamplingParams
from codea1_eval.models.openai_backend import GenerationError, OpenAIBackend
from codea1_eval.models.vllm_server import free_port


class ScriptedEndpoint:
    """Answers chat and text completions; ``failures`` HTTP statuses are returned first, in order.
    ``max_choices`` caps the choices per answer (1 = a server that ignores ``n``, like llama.cpp)."""

    def __init__(self, failures=(), max_choices=None):
        self.failures, self.max_choices, self.bodies = list(failures), max_choices, []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.bodies.append((self.path, body))
                if endpoint.failures:
                    self.send_response(endpoint.failures.pop(0))
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error": {"message": "scripted failure"}}')
                    return
                count = body["n"] if endpoint.max_choices is None else min(body["n"], endpoint.max_choices)
                seed = body.get("seed", 0)
                chat = self.path.endswith("/chat/completions")
                choices = [{"index": i, "finish_reason": "stop",
                            **({"message": {"role": "assistant", "content": f"seed {seed} choice {i}"}}
                               if chat else {"text": f"seed {seed} choice {i}"})} for i in range(count)]
                payload = {"id": "x", "object": "chat.completion" if chat else "text_completion",
                           "created": 0, "model": body["model"], "choices": choices,
                           "usage": {"prompt_tokens": 7, "completion_tokens": 3 * count, "total_tokens": 0}}
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint_factory():
    started = []

    def start(**kwargs):
        started.append(ScriptedEndpoint(**kwargs))
        return started[-1]

    yield start
    for endpoint in started:
        endpoint.close()


def chat(n=1, temperature=0.7, seed=10):
    return GenerationRequest(({"role": "user", "content": "hi"},),
                             params=SamplingParams(n=n, temperature=temperature, seed=seed, max_tokens=5))


def backend(url, **options):
    return OpenAIBackend(f"m@{url}", retry_base=0.01, **options)


def test_missing_choices_are_requested_again_with_the_next_seeds(endpoint_factory):
    endpoint = endpoint_factory(max_choices=1)
    results = backend(endpoint.url).generate([chat(n=3)])
    assert [c.text for c in results[0]] == ["seed 10 choice 0", "seed 11 choice 0", "seed 12 choice 0"]
    assert [body["n"] for _, body in endpoint.bodies] == [3, 2, 1]
    assert [(c.prompt_tokens, c.completion_tokens) for c in results[0]] == [(7, 3)] * 3


def test_n_choices_in_one_request_when_the_server_honours_n(endpoint_factory):
    endpoint = endpoint_factory()
    results = backend(endpoint.url).generate([chat(n=3)])
    assert [c.text for c in results[0]] == [f"seed 10 choice {i}" for i in range(3)]
    assert len(endpoint.bodies) == 1
    assert [c.completion_tokens for c in results[0]] == [None, None, None]  # only a total was reported


def test_greedy_asks_once_and_copies(endpoint_factory):
    endpoint = endpoint_factory()
    results = backend(endpoint.url).generate([chat(n=4, temperature=0.0)])
    assert [c.text for c in results[0]] == ["seed 10 choice 0"] * 4
    assert [body["n"] for _, body in endpoint.bodies] == [1]


def test_transient_failures_are_retried(endpoint_factory):
    endpoint = endpoint_factory(failures=[503, 429, 500])
    prompt = GenerationRequest(None, "def f():", SamplingParams(max_tokens=3, seed=1))
    reported = []
    results = backend(endpoint.url, max_retries=3).generate(
        [prompt], on_result=lambda i, c: reported.append((i, c[0].text)))
    assert reported == [(0, "seed 1 choice 0")] and results[0][0].text == "seed 1 choice 0"
    assert len(endpoint.bodies) == 4 and endpoint.bodies[-1][0] == "/v1/completions"


def test_retries_run_out_with_one_clear_error(endpoint_factory):
    endpoint = endpoint_factory(failures=[503] * 5)
    with pytest.raises(GenerationError, match=rf"endpoint {endpoint.url} \(model 'm'\) failed after 3 attempts: "
                                              "HTTP 503"):
        backend(endpoint.url, max_retries=2).generate([chat()])


def test_client_errors_are_not_retried(endpoint_factory):
    endpoint = endpoint_factory(failures=[400, 400])
    with pytest.raises(GenerationError, match=r"failed: HTTP 400"):
        backend(endpoint.url, max_retries=5).generate([chat()])
    assert len(endpoint.bodies) == 1


def test_unreachable_endpoint_fails_after_retries():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(GenerationError, match=r"failed after 2 attempts: APIConnectionError"):
        backend(url, max_retries=1).generate([chat()])


def test_finished_requests_are_reported_before_a_failure(endpoint_factory):
    endpoint = endpoint_factory()
    reported = []
    good = backend(endpoint.url, concurrency=1)
    good.generate([chat(seed=1), chat(seed=2)], on_result=lambda i, c: reported.append(i))
    endpoint.failures = [400]
    with pytest.raises(GenerationError):
        good.generate([chat(seed=3), chat(seed=4)], on_result=lambda i, c: reported.append(i))
    assert sorted(reported) == [0, 1]


def test_a_server_returning_no_choices_is_an_error_not_a_hang(endpoint_factory):
    endpoint = endpoint_factory(max_choices=0)
    with pytest.raises(GenerationError, match=r"\(model 'm'\) returned no choices"):
        backend(endpoint.url).generate([chat(n=2)])
    assert len(endpoint.bodies) == 1
