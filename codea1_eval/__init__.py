"""codea1-eval: evaluate, scale and co-train code LLMs and test-writing LLMs."""

__version__ = "0.1.0"
