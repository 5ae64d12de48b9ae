"""User-facing errors: one line that names the field and the fix."""


class ModelError(ValueError):
    """A model description is invalid. The message names the field and what to do."""


class SingularMatrixError(ValueError):
    """A matrix the dynamics must solve with (the mass matrix) is singular at this state.
    A simulation that meets it stops there and keeps what it computed."""
