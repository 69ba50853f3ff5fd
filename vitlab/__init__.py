"""vitlab: the helpers the vitlab book's notebooks share.

`import vitlab` is cheap and torch-free; the torch-using doors below load on first use, so
`vitlab book` (rows and pages only) runs where torch is not installed.
"""
import importlib

__all__ = ["build", "describe", "pick_device", "synchronize", "timed"]
__version__ = "0.1.0"
_DOORS = {"build": "vitlab.models", "describe": "vitlab.machine", "pick_device": "vitlab.device",
          "synchronize": "vitlab.device", "timed": "vitlab.timing"}


def __getattr__(name):
    if name in _DOORS:
        return getattr(importlib.import_module(_DOORS[name]), name)
    try:  # `import vitlab` then `vitlab.results...`: submodules load on first use too
        return importlib.import_module(f"vitlab.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"vitlab.{name}":
            raise
        raise AttributeError(f"module 'vitlab' has no attribute {name!r}") from None
