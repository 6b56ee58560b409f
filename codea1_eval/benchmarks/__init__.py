"""Benchmarks: loaders of the data files (HumanEval, HumanEval+, MBPP+, ULT, BigCodeBench), each task's
prompt and inputs, the harness hooks of each benchmark's own evaluation, and their ground truth."""
