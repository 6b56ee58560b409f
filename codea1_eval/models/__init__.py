"""Model backends: the generation protocol, spec parsing and the backend registry.

Importing this package does not import torch or transformers; backends load them when built.
"""

from codea1_eval.models.base import Backend, Completion, GenerationRequest, SamplingParams
from codea1_eval.models.spec import (
    BACKENDS,
    describe_backends,
    load_backend,
    parse_backend_options,
    parse_model_spec,
    register_backend,
)

__all__ = [
    "BACKENDS",
    "Backend",
    "Completion",
    "GenerationRequest",
    "SamplingParams",
    "describe_backends",
    "load_backend",
    "parse_backend_options",
    "parse_model_spec",
    "register_backend",
]
