"""The package's errors, one class per exit code of the CLI (docs/PYTHON.md#errors).

The message of each is the one the CLI prints after ``attn-trace: error:``.
"""


class Error(Exception):
    """Every error attn_trace raises; ``exit_code`` is the CLI's for the same failure."""

    exit_code = 4


class ProblemError(Error, ValueError):
    """Bad input: a problem, an option's value, a request past the budget (exit 2)."""

    exit_code = 2


class BackendUnavailable(Error):
    """A backend that is not available here, such as ``backend="cuda"`` without a GPU (exit 3)."""

    exit_code = 3


class InternalError(Error):
    """A bug in attn-trace (exit 4): please report it with the problem."""

    exit_code = 4
