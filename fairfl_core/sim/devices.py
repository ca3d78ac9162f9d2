"""Device names: what a config's ``engine.device`` (or ``--device``) may say, and what it denotes here."""

from __future__ import annotations

import torch

__all__ = ["parse_device", "resolve_device"]


def parse_device(name: str) -> torch.device | None:
    """``name`` as a torch device, None for ``auto``; ``ValueError`` naming the valid forms for anything
    else. Does not look at the hardware (see :func:`resolve_device`)."""
    if name == "auto":
        return None
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        device = None
    if device is None or device.type not in ("cpu", "cuda"):
        raise ValueError(
            f"device {name!r} is not one fairfl runs on: use 'auto', 'cpu', 'cuda' or 'cuda:N' "
            "(--device, engine.device, device=)"
        )
    return device


def resolve_device(name: str) -> torch.device:
    """The device ``name`` denotes on this machine (``auto``: CUDA when available, else the CPU)."""
    device = parse_device(name)
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"engine.device={name!r} but CUDA is not available here; use 'cpu' or 'auto'")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise ValueError(
            f"device {name!r}: this machine has {torch.cuda.device_count()} CUDA device(s); use 'cuda:0' "
            "up to the last one, or 'auto'"
        )
    return device
