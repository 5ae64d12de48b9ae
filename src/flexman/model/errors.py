"""User-facing errors: one line that names the field and the fix."""


class ModelError(ValueError):
    """A model description is invalid. The message names the field and what to do; it is
    always one line (any line breaks in values quoted into it become spaces)."""

    def __init__(self, message=""):
        super().__init__(" ".join(str(message).split()))


class SingularMatrixError(ValueError):
    """A matrix the dynamics must solve with (the mass matrix) is singular at this state.
    A simulation that meets it stops there and keeps what it computed."""


class FlexmanWarning(UserWarning):
    """A notice from flexman (a step above the stability limit, a model kept as written, a
    truncation that has not converged): printed as one line, ``flexman: <message>``, without
    Python's source-line decoration (:func:`one_line_warnings`); filter it like any warning."""


class FlexmanRuntimeWarning(FlexmanWarning, RuntimeWarning):
    """A run-time notice (a diverged run kept up to its fault, a plan that still exceeds a limit
    between its knots): one line, and a RuntimeWarning for filters."""


def one_line_warnings() -> None:
    """Format :class:`FlexmanWarning` (and its subclasses) as one line; every other warning as
    Python would. Installed once when flexman is imported."""
    import warnings

    previous = warnings.formatwarning
    if getattr(previous, "_flexman", False):
        return

    def formatwarning(message, category, filename, lineno, line=None):
        if isinstance(category, type) and issubclass(category, FlexmanWarning):
            return f"flexman: {message}\n"
        return previous(message, category, filename, lineno, line)

    formatwarning._flexman = True
    warnings.formatwarning = formatwarning
