"""Judging: how a program is tested and scored. Each problem names a test kind (``kinds.TEST_KINDS``)
that builds the reference's and a candidate's sandbox programs, reads the ground truth and gives the
verdict; ``groundtruth`` runs and caches a benchmark's references."""

from codea1_eval.judging.groundtruth import compute_ground_truth, ground_truth_pass_rate
from codea1_eval.judging.kinds import TEST_KINDS, TestKind, candidate_program, judge, kind_of
from codea1_eval.judging.records import FAIL, PASS, GroundTruth, Verdict

__all__ = ["FAIL", "PASS", "TEST_KINDS", "GroundTruth", "TestKind", "Verdict", "candidate_program",
           "compute_ground_truth", "ground_truth_pass_rate", "judge", "kind_of"]
