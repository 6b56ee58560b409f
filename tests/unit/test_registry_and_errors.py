import pytest

from codea1_eval.benchmarks.base import BENCHMARKS
from codea1_eval.errors import UserError
from codea1_eval.registry import Registry


def test_did_you_mean():
    with pytest.raises(UserError, match=r"unknown benchmark 'mbpp'\. Did you mean 'mbpp\+'\?"):
        BENCHMARKS.check("mbpp")


def test_lazy_targets_are_imported_on_first_use():
    registry = Registry("thing")
    registry.register("join", "os.path:join")
    assert registry.get("join")("a", "b") == "a/b"
    with pytest.raises(ValueError):
        registry.register("join", "os.path:join")


def test_unknown_without_close_match_lists_known_names():
    with pytest.raises(UserError, match="Known: bigcodebench, bigcodebench-hard, humaneval, humaneval\\+, humaneval\\+-mini, mbpp\\+"):
        BENCHMARKS.check("zzzzzz")
