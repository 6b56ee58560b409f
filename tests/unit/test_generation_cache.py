"""The SQLite generation cache in front of a backend (a counting fake backend: pure cache logic)."""

from codea1_eval.models import GenerationRequest, SamplingParams
from codea1_eval.models.base import Completion
from codea1_eval.models.cache import CachedBackend, GenerationCache, default_cache_path, sample_key
from codea1_eval.models.driver import generate_all


class CountingBackend:
    """Answers sample ``s`` of a prompt with ``"<version>:<prompt>#s"`` and records what it was asked.

    With ``max_requests_per_call`` set it plays a batch-sensitive backend: each answer also names
    the call's prompts (``"...@a+b"``), as padding would leave a trace in real samples."""

    def __init__(self, identity="fake:model", version="v1", max_requests_per_call=None):
        self.identity, self.version, self.asked = identity, version, []
        self.max_requests_per_call = max_requests_per_call

    def generate(self, requests, progress=None, on_result=None):
        results = []
        batch = "@" + "+".join(r.prompt for r in requests) if self.max_requests_per_call else ""
        for index, request in enumerate(requests):
            self.asked.append((request.prompt, request.params.n))
            completions = [Completion(f"{self.version}:{request.prompt}#{s}{batch}", "stop", 3, 2)
                           for s in range(request.params.n)]
            results.append(completions)
            if on_result:
                on_result(index, completions)
        return results


def request(prompt, n=2, temperature=0.7, seed=1):
    return GenerationRequest(None, prompt, SamplingParams(n=n, temperature=temperature, seed=seed))


def texts(results):
    return [[c.text for c in completions] for completions in results]


def test_second_run_is_served_from_the_cache(tmp_path):
    first = CachedBackend(CountingBackend(), GenerationCache(tmp_path / "c.sqlite3"))
    assert texts(first.generate([request("a"), request("b")])) == [["v1:a#0", "v1:a#1"], ["v1:b#0", "v1:b#1"]]
    assert (first.stats.hits, first.stats.misses) == (0, 4)

    inner = CountingBackend(version="v2")
    second = CachedBackend(inner, GenerationCache(tmp_path / "c.sqlite3"))
    reported = []
    results = second.generate([request("a"), request("b")], on_result=lambda i, c: reported.append(i))
    assert texts(results) == [["v1:a#0", "v1:a#1"], ["v1:b#0", "v1:b#1"]]
    assert inner.asked == []
    assert reported == [0, 1]
    assert (second.stats.hits, second.stats.misses) == (4, 0)


def test_growing_n_keeps_the_cached_samples_and_adds_the_rest(tmp_path):
    cache = GenerationCache(tmp_path / "c.sqlite3")
    CachedBackend(CountingBackend(), cache).generate([request("a", n=2)])
    grown = CachedBackend(CountingBackend(version="v2"), cache)
    assert texts(grown.generate([request("a", n=4)])) == [["v1:a#0", "v1:a#1", "v2:a#2", "v2:a#3"]]
    assert (grown.stats.hits, grown.stats.misses) == (2, 2)


def test_key_covers_model_prompt_params_and_sample_index():
    base = sample_key("m", request("a"), 0)
    assert base == sample_key("m", request("a", n=8), 0)  # n is not part of a sample's identity
    different = {sample_key("m2", request("a"), 0), sample_key("m", request("b"), 0),
                 sample_key("m", request("a", temperature=0.2), 0), sample_key("m", request("a", seed=2), 0),
                 sample_key("m", request("a"), 1),
                 sample_key("m", GenerationRequest(({"role": "user", "content": "a"},)), 0)}
    assert base not in different and len(different) == 6


def test_cache_location_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEA1_GENERATION_CACHE", "off")
    assert default_cache_path() is None
    monkeypatch.setenv("CODEA1_GENERATION_CACHE", str(tmp_path / "g.sqlite3"))
    assert default_cache_path() == tmp_path / "g.sqlite3"
    monkeypatch.delenv("CODEA1_GENERATION_CACHE")
    monkeypatch.setenv("CODEA1_CACHE_DIR", str(tmp_path / "cache"))
    assert default_cache_path() == tmp_path / "cache" / "generations.sqlite3"


def test_batch_sensitive_backend_gets_fixed_chunks_and_recorded_requests_are_not_reported():
    backend = CountingBackend(max_requests_per_call=2)
    reported, progressed = {}, []
    requests = [request(p, n=1) for p in "abcde"]
    generate_all(backend, requests, lambda i, c: reported.update({i: c[0].text}), progressed.append, done={0, 2, 3})
    assert backend.asked == [("a", 1), ("b", 1), ("e", 1)]  # chunk (c, d) is all done; (a, b) is sent whole
    assert reported == {1: "v1:b#0@a+b", 4: "v1:e#0@e"}
    assert progressed == [1, 1]


def test_batch_insensitive_backend_gets_only_the_missing_requests():
    backend = CountingBackend()
    reported = []
    generate_all(backend, [request(p, n=1) for p in "abc"], lambda i, c: reported.append(i), done={1})
    assert backend.asked == [("a", 1), ("c", 1)]
    assert reported == [0, 2]


def test_cache_serves_a_batch_sensitive_call_only_when_all_of_it_is_cached(tmp_path):
    cache = GenerationCache(tmp_path / "c.sqlite3")
    CachedBackend(CountingBackend(max_requests_per_call=2), cache).generate([request("a", n=1)])
    inner = CountingBackend(version="v2", max_requests_per_call=2)
    second = CachedBackend(inner, cache)
    assert texts(second.generate([request("a", n=1), request("b", n=1)])) == [["v1:a#0@a"], ["v2:b#0@a+b"]]
    assert inner.asked == [("a", 1), ("b", 1)]  # "b" is generated next to "a", as in an uninterrupted run
    assert (second.stats.hits, second.stats.misses) == (1, 1)
    third = CachedBackend(CountingBackend(version="v3", max_requests_per_call=2), cache)
    assert texts(third.generate([request("a", n=1), request("b", n=1)])) == [["v1:a#0@a"], ["v2:b#0@a+b"]]
    assert third.backend.asked == []
