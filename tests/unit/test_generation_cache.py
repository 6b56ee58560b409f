"""The SQLite generation cache in front of a backend (a counting fake backend: pure cache logic)."""

from codea1_eval.models import GenerationRequest, SamplingParams
from codea1_eval.models.base import Completion
from codea1_eval.models.cache import CachedBackend, GenerationCache, default_cache_path, sample_key


class CountingBackend:
    """Answers sample ``s`` of a prompt with ``"<version>:<prompt>#s"`` and records what it was asked."""

    max_requests_per_call = None

    def __init__(self, identity="fake:model", version="v1"):
        self.identity, self.version, self.asked = identity, version, []

    def generate(self, requests, progress=None, on_result=None):
        results = []
        for index, request in enumerate(requests):
            self.asked.append((request.prompt, request.params.n))
            completions = [Completion(f"{self.version}:{request.prompt}#{s}", "stop", 3, 2)
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
