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
    with pytest.raises(UserError, match="Known: bigcodebench, bigcodebench-hard, humaneval, humaneval\\+, humaneval\\+-mini, kodcode, mbpp\\+"):
        BENCHMARKS.check("zzzzzz")


def test_pseudo_models_serve_their_own_role_only():
    from codea1_eval.metrics.pseudo_models import MutantsCoder, ReferenceInputsTester, pseudo_model

    assert isinstance(pseudo_model("mutants", "coder"), MutantsCoder)
    assert isinstance(pseudo_model("reference-inputs", "tester"), ReferenceInputsTester)
    assert pseudo_model("smollm2", "tester") is None and pseudo_model(None, "coder") is None
    with pytest.raises(UserError, match="^reference-inputs is a tester pseudo-model; it cannot be the coder$"):
        pseudo_model("reference-inputs", "coder")
    with pytest.raises(UserError, match="^mutants is a coder pseudo-model; it cannot be the tester$"):
        pseudo_model("mutants", "tester")
