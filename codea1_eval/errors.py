"""Exceptions that the CLI turns into one-line messages and a non-zero exit."""


class UserError(Exception):
    """A problem with the user's input (bad name, missing file, refused config); never a bug."""


class SandboxError(Exception):
    """The execution infrastructure failed (not the candidate program); the work is retried."""


class ReferenceFailure(Exception):
    """Reference solutions that must pass failed on this machine: its scores could not be trusted."""
