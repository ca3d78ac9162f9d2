"""What a fairfl request or reply carries over Flower: numpy arrays and config values, which ``apps.py`` puts
in an ``ArrayRecord`` and a ``ConfigRecord`` (Flower's ``Array`` holds ``np.save``'s bytes: bit-exact).

A :class:`~fairfl_core.sim.local.LocalSpec` travels field by field (:func:`spec_payload`): tensors as arrays,
numbers as config values, and the fields that hold fairfl objects (``objective``, ``loss``, ``terms``,
``statistics``) as one pickle that a node loads with only fairfl's own classes and functions and
``functools.partial`` allowed (:func:`load_objects`, after the "Restricting Globals" recipe of Python's pickle
documentation): a message can name fairfl code but never bring code of its own.
"""

from __future__ import annotations

import io
import pickle
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import torch

from fairfl_core.flower.support import FlowerUnsupported
from fairfl_core.sim.local import LocalSpec

__all__ = ["Payload", "array", "load_objects", "payload_spec", "spec_payload", "tensor"]

SPEC = "spec."  # prefix of a LocalSpec's entries
OBJECTS = SPEC + "objects"


@dataclass
class Payload:
    """A request or a reply: named numpy arrays and config values (numbers, strings, bytes, lists of them)."""

    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)


def array(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def tensor(a: np.ndarray, device: torch.device) -> torch.Tensor:
    """The array as a tensor on ``device``, in its own dtype (a copy: received buffers are read-only)."""
    return torch.from_numpy(np.array(a)).to(device)


def spec_payload(spec: LocalSpec) -> Payload:
    """``spec`` as arrays, config values and a restricted pickle of its fairfl objects (module docstring)."""
    out, objects = Payload(), {}
    for f in fields(LocalSpec):
        value = getattr(spec, f.name)
        if isinstance(value, torch.Tensor):
            out.arrays[SPEC + f.name] = array(value)
        elif isinstance(value, (int, float, np.integer, np.floating)):
            out.config[SPEC + f.name] = value.item() if isinstance(value, np.generic) else value
        elif value is not None and (callable(value) or len(value)):
            objects[f.name] = value
    if objects:
        out.config[OBJECTS] = dump_objects(objects)
    return out


def payload_spec(payload: Payload, device: torch.device) -> LocalSpec:
    """The LocalSpec that :func:`spec_payload` encoded, its tensors on ``device``."""
    values = {k: v for k, v in payload.config.items() if k.startswith(SPEC) and k != OBJECTS}
    values.update({k: tensor(a, device) for k, a in payload.arrays.items() if k.startswith(SPEC)})
    named = {k.removeprefix(SPEC): v for k, v in values.items()}
    if OBJECTS in payload.config:
        named.update(load_objects(payload.config[OBJECTS]))
    return LocalSpec(**named)


def dump_objects(objects: dict[str, Any]) -> bytes:
    """The pickle of ``objects``, checked to load under :func:`load_objects` before it is sent."""
    try:
        blob = pickle.dumps(objects, protocol=pickle.HIGHEST_PROTOCOL)
        load_objects(blob)
    except (pickle.PicklingError, pickle.UnpicklingError, AttributeError, TypeError) as exc:
        raise FlowerUnsupported(
            f"the local step's {sorted(objects)} cannot travel in a Flower message ({exc}): build them "
            "from fairfl's own module-level classes and functions (a functools.partial of one is fine, a "
            "lambda or a closure is not)"
        ) from exc
    return blob


class _FairflUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        fairfl = module == "fairfl_core" or module.startswith("fairfl_core.")
        if fairfl or (module, name) == ("functools", "partial"):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"{module}.{name} is not fairfl code: a fairfl message's objects may only name fairfl's own "
            "classes and functions (and functools.partial)"
        )


def load_objects(blob: bytes) -> dict[str, Any]:
    """Unpickle a LocalSpec's objects, allowing only fairfl's classes and functions (module docstring)."""
    return _FairflUnpickler(io.BytesIO(blob)).load()
