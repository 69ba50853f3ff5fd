"""vitlab: the helpers the vitlab book's notebooks share."""
from vitlab.device import describe, pick_device, synchronize
from vitlab.models import build
from vitlab.timing import timed

__all__ = ["build", "describe", "pick_device", "synchronize", "timed"]
__version__ = "0.1.0"
