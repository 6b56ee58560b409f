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
        documented = "contained" if row.documented else "NOT contained"
        observed = (("contained" if row.contained else "not contained") + f" ({row.detail})" if row.evidence
                    else row.detail)
        table.add_row(row.level, row.claim.resource, row.claim.attack, documented, observed,
                      "yes" if row.holds else "NO", f"{row.seconds:.2f}")
    console = Console(width=200)
    console.print(table)
    for level, in_force in {row.level: row.in_force for row in rows}.items():
        console.print(protections_line(level, in_force or {}))


def protections_line(level: str, in_force: dict) -> str:
    """One line naming what contains files, network, signals and other processes at ``level`` here, and what is
    missing."""
    kinds = ("files", "network", "signals", "processes")
    present = [kind for kind in kinds if in_force.get(kind)]
    missing = [kind for kind in kinds if not in_force.get(kind)]
    if not present:
        return f"{level}: files, network, signals and processes NOT contained ({in_force.get('by')})"
    line = f"{level}: {', '.join(present)} contained by {in_force.get('by')}"
    return line + (f"; NOT contained: {', '.join(missing)}" if missing else "")
