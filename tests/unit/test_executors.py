"""`--executor` specs: the local pool by default, registry errors for unknown names."""

from __future__ import annotations

import pytest

from codea1_eval.errors import UserError
from codea1_eval.sandbox import Executor, Program, make_executor


def test_local_is_the_engine_pool_and_runs_programs():
    executor = make_executor("local", parallel=2)
    assert type(executor) is Executor and executor.parallel == 2
    results = executor.map([Program("def f(x):\n    return 2 * x\n", "f", calls=[(3,)])])
    assert results[0].calls[0].value == 6


@pytest.mark.parametrize("spec, message", [("local:somewhere", "takes no address"),
                                           ("rayy", "unknown executor 'rayy'. Did you mean 'ray'")])
def test_bad_specs_are_user_errors(spec, message):
    with pytest.raises(UserError, match=message):
        make_executor(spec)
