"""Where vitlab keeps its downloads and scratch files, and whether the model hub can be reached. Torch-free."""
from __future__ import annotations

import os
import socket
from functools import lru_cache
from pathlib import Path


def cache_dir() -> Path:
    """Where vitlab keeps downloads, trained weights and scratch results ($VITLAB_CACHE)."""
    return Path(os.environ.get("VITLAB_CACHE", Path.home() / ".cache" / "vitlab"))


def _truthy(value: str | None) -> bool:
    return str(value).lower() in ("1", "true", "yes", "on")


@lru_cache(maxsize=None)
def hub_offline_reason() -> str | None:
    """Why the model hub cannot be used now, or None when it is reachable."""
    if _truthy(os.environ.get("HF_HUB_OFFLINE")) or _truthy(os.environ.get("VITLAB_OFFLINE")):
        return "offline: HF_HUB_OFFLINE=1"
    try:
        socket.create_connection(("huggingface.co", 443), timeout=3).close()
    except OSError as error:
        return f"offline: huggingface.co unreachable ({error.__class__.__name__})"
    return None
