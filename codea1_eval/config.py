"""Options every command that runs models and the sandbox shares, apart from the ones that define
its results: a run dir's config hash covers only the latter."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path


def run_only(default=None, **kwargs):
    """A dataclass field that does not change a run's results (left out of its config hash)."""
    if "default_factory" in kwargs:
        return field(metadata={"run_only": True}, **kwargs)
    return field(default=default, metadata={"run_only": True})


def omitted_at_default(default):
    """A result field added after runs were recorded without it: left out of the config hash while it holds
    ``default`` (the behaviour those runs had), so they keep their hash and stay resumable."""
    return field(default=default, metadata={"omitted_at_default": True})


@dataclass
class RunOptions:
    """Where and how a run executes; none of these changes its results."""

    out: Path | None = run_only()
    data_dir: Path | None = run_only()
    parallel: int | None = run_only()
    executor: str = run_only("local")
    batch_size: int = run_only(16)
    backend_options: dict = run_only(default_factory=dict)
    generation_cache: bool = run_only(True)
    overwrite: bool = run_only(False)

    def __post_init__(self) -> None:
        if hasattr(self, "tasks"):  # the commands' chosen tasks (``--task``): one order, each once, as a tuple
            self.tasks = tuple(sorted(set(self.tasks)))

    def load_backend(self, spec: str):
        """The model backend for ``spec`` with these options (weights load lazily, on first use)."""
        from codea1_eval.models import load_backend

        return load_backend(spec, self.backend_options, hints={"batch_size": self.batch_size},
                            cache="default" if self.generation_cache else None)

    def result_fields(self) -> dict:
        """The fields that determine results, as a JSON-ready dict."""
        fields_ = self.__dataclass_fields__.values()
        left_out = {f.name for f in fields_ if f.metadata.get("run_only")
                    or (f.metadata.get("omitted_at_default") and getattr(self, f.name) == f.default)}
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items() if k not in left_out}
