"""User-facing errors: one line that names the field and the fix."""


class ModelError(ValueError):
    """A model description is invalid. The message names the field and what to do; it is
    always one line (any line breaks in values quoted into it become spaces)."""

    def __init__(self, message=""):
        super().__init__(" ".join(str(message).split()))


class SingularMatrixError(ValueError):
    """A matrix the dynamics must solve with (the mass matrix) is singular at this state.
    A simulation that meets it stops there and keeps what it computed."""
