"""Tester outputs as asserts: parse them from replies (``parse``), write and read values as literals
(``literals``), judge operators (``compare``), validate them on the reference (``validate``) and run
them on any program for per-assert verdicts (``run``). ``records`` holds the shapes they share."""

from codea1_eval.asserts.compare import holds
from codea1_eval.asserts.literals import literal_value, value_source
from codea1_eval.asserts.parse import asserts_text, extract_asserts, extract_rounds
from codea1_eval.asserts.records import (CLASSES, DUPLICATE, FAITHFUL, KEPT, MODES, NO_ASSERT, NOT_A_CALL, RAISED,
                                         STRICT, TIMED_OUT, UNPARSEABLE, UNREPRESENTABLE, VALID, WRONG_ANSWER,
                                         AssertCheck, AssertResult, Extraction, ParsedAssert, SuiteResult)
from codea1_eval.asserts.run import AssertJob, AssertRun, assert_program, assert_verdicts, calls_program, run_asserts
from codea1_eval.asserts.validate import validate_suite, validate_suites

__all__ = [
    "CLASSES", "DUPLICATE", "FAITHFUL", "KEPT", "MODES", "NO_ASSERT", "NOT_A_CALL", "RAISED", "STRICT", "TIMED_OUT",
    "UNPARSEABLE", "UNREPRESENTABLE", "VALID", "WRONG_ANSWER", "AssertCheck", "AssertJob", "AssertResult", "AssertRun",
    "Extraction", "ParsedAssert", "SuiteResult", "assert_program", "assert_verdicts", "asserts_text",
    "calls_program", "extract_asserts", "extract_rounds", "holds", "literal_value", "run_asserts",
    "validate_suite", "validate_suites", "value_source",
]
