"""Package attributes imported on first use: a package that lists ``{name: submodule}`` gets a
module ``__getattr__`` and ``__dir__`` from :func:`lazy_names`, so that importing it (at every
cached run) does not import every submodule."""
from __future__ import annotations

import importlib
import sys


def lazy_names(package: str, where: dict):
    """(``__getattr__``, ``__dir__``) for ``package``; ``where[name]`` is the submodule holding
    ``name``, or None where ``name`` is the submodule itself. A name is imported once, then bound
    on the package."""
    def __getattr__(name):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(f".{where[name] or name}", package)
        value = module if where[name] is None else getattr(module, name)
        vars(sys.modules[package])[name] = value
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
