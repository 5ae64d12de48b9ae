"""User-facing errors: one line that names the field and the fix."""


class ModelError(ValueError):
    """A model description is invalid. The message names the field and what to do."""
