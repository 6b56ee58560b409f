"""`codea1-eval sandbox selftest`: check every threat-model claim on this machine and print the table."""

from __future__ import annotations

from codea1_eval.sandbox.isolation import make_isolation
from codea1_eval.sandbox.threat_model import ClaimResult, available_levels, check_claims


def selftest_levels(isolation: str) -> list[str]:
    """The levels ``--isolation`` names: one level, or ``all`` for every level this machine has."""
    if isolation == "all":
        return available_levels()
    make_isolation(isolation)  # unknown level or missing bwrap: one clear error
    return [isolation]


def run_selftest(isolation: str = "all") -> list[ClaimResult]:
    """Check every claim at each level ``isolation`` names."""
    return [row for level in selftest_levels(isolation) for row in check_claims(level)]


def print_selftest(rows: list[ClaimResult]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="sandbox selftest: the threat model, checked on this machine")
    for column in ("level", "resource", "attack", "documented", "observed", "holds", "seconds"):
        table.add_column(column)
    for row in rows:
        documented = "contained" if row.claim.contained[row.level] else "NOT contained"
        observed = (("contained" if row.contained else "not contained") + f" ({row.detail})" if row.evidence
                    else row.detail)
        table.add_row(row.level, row.claim.resource, row.claim.attack, documented, observed,
                      "yes" if row.holds else "NO", f"{row.seconds:.2f}")
    Console(width=200).print(table)
