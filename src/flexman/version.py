"""The version of flexman (also ``flexman.__version__``); kept apart so that any module can
import it without importing the whole package."""

__version__ = "0.1.0"
