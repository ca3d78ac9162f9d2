"""The simulation engine: local training plus the batched client-side computations algorithms ask for.

An algorithm never touches a DataLoader or an ``nn.Module``: it calls

* ``train(clients, start, spec, seed)``: local training (batched or sequential trainer, same numbers),
  ``train_pooled(...)``: one model trained on the clients' pooled data (Centralized), or ``stack(...)``: the
  same clients' state advanced step by step (``client_stack.py``);
* ``losses(w, clients, split)``: each client's mean loss and accuracy on its full split (train, val or
  test), at one model ``[P]`` or at per-client models ``[K, P]`` (q-FFL's F_k at the received model,
  Power-of-Choice, AFL, ...);
* ``gradients(w, clients)``: each client's full-batch gradient (FedEBA+, DivFL, clustered sampling);
* ``features(w, clients)``: the mean penultimate activation per client (Equitable-FL);
* ``group_counts(w, clients, split)``: on data with a sensitive attribute, each client's counts of samples
  by (group, label, prediction) (FairFed's group metrics, ``metrics/parity.py``);
* ``pooled(w)``, ``pooled_group_counts(w)``: accuracy and loss, and the group counts, on the pooled test
  set.

All of them are a few large forward passes over the concatenated samples, or one call mapped over the client
axis of per-client models (``client_map``: ``vmap``, or a loop over the stacked clients for convolutional
models on CPU, where grouped convolutions are slow). For ReLU MLPs, local training and ``gradients`` use the
closed-form gradient of ``mlp_step.py`` instead (``client_axis="bmm"``), for the character LSTM the
written-out backpropagation through time of ``lstm_step.py`` when asked (``"bmm"``, or ``"measure"`` where it
is timed faster). The axis is decided once (``client_map.ClientAxis``) and read by the engine and its trainer
alike. Every computation runs in the engine's ``precision`` (``precision.py``: exact by default, TF32 off on
CUDA; ``tf32`` or ``bf16`` by choice).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Hashable, Iterator
from typing import TYPE_CHECKING, Concatenate, Literal, ParamSpec, TypeVar

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from fairfl_core.data.federated import SPLITS, FederatedDataset
from fairfl_core.dataclass_io import check_option
from fairfl_core.models.dropout import draws_from_torch
from fairfl_core.models.lstm import use_kernel
from fairfl_core.sim.batched_trainer import BatchedTrainer
from fairfl_core.sim.batches import BatchSchedule, draw_schedule
from fairfl_core.sim.client_map import ClientAxis, ClientAxisName, client_grad_and_value, client_map
from fairfl_core.sim.client_stack import ClientStack
from fairfl_core.sim.faults import completed_steps, truncate_schedule
from fairfl_core.sim.feature_view import FeatureView
from fairfl_core.sim.local import LocalResult, LocalSpec, SampleLoss, cross_entropy
from fairfl_core.sim.lstm_step import lstm_gradient
from fairfl_core.sim.mlp_step import mlp_gradient
from fairfl_core.sim.params import ParamSpace
from fairfl_core.sim.precision import Precision, PrecisionMode
from fairfl_core.sim.sequential import SequentialTrainer
from fairfl_core.sim.statistics import TRANSFORMS, Transform
from fairfl_core.sim.transfer import to_device

if TYPE_CHECKING:
    from fairfl_core.sim.protocol import ClientEngine, Trainer

__all__ = ["Engine", "TRAINERS", "TrainerKind", "batchnorm_rule"]

TrainerKind = Literal["batched", "sequential"]
TRAINERS: dict[TrainerKind, type] = {"batched": BatchedTrainer, "sequential": SequentialTrainer}

Args = ParamSpec("Args")
R = TypeVar("R")


def batchnorm_rule(model: nn.Module) -> nn.Module:
    """``model`` with every BatchNorm's step counter removed (in place): running statistics then follow the
    layer's exponential ``momentum``, per client under the client map; a cumulative average (``momentum``
    None) would need the counter and is refused."""
    for name, module in model.named_modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            if module.momentum is None or not module.track_running_stats:
                raise ValueError(
                    f"BatchNorm layer {name!r} has momentum=None or no running statistics; fairfl keeps "
                    "per-client running statistics with an exponential momentum: use momentum=0.1 "
                    "(the default)"
                )
            module.num_batches_tracked = None
    return model


def _in_precision(method: Callable[Concatenate[Engine, Args], R]) -> Callable[Concatenate[Engine, Args], R]:
    """An evaluation's kernels in the engine's precision (``precision.py``: TF32 off when exact)."""

    @functools.wraps(method)
    def evaluation(self: Engine, *args: Args.args, **kwargs: Args.kwargs) -> R:
        with self.precision.kernels():
            return method(self, *args, **kwargs)

    return evaluation


class Engine:
    """Model + federated data on one device, and the per-client computations over them.

    BatchNorm (``batchnorm_rule``): each trained client keeps its own running statistics, updated by its
    local steps (momentum as the layer's); the server sets the global ones to the plain average over the
    clients whose upload arrives (``algorithms/base.py``); every evaluation (losses, accuracies, gradients,
    features) runs in eval mode with the global running statistics ``running``, so one client's numbers never
    depend on another client's data or on ``eval_batch``. GroupNorm (the default for every model here)
    has no statistics.
    """

    def __init__(
        self,
        model: nn.Module,
        data: FederatedDataset,
        *,
        kind: TrainerKind = "batched",
        chunk_size: int | None = None,
        eval_batch: int = 8192,
        dtype: torch.dtype = torch.float32,
        client_axis: ClientAxisName = "auto",
        precision: PrecisionMode = "exact",
        model_key: Hashable | None = None,
    ) -> None:
        check_option(kind, TrainerKind, "engine.kind")
        self.data = data
        self.device = data.device
        self.dtype = dtype
        self.model = batchnorm_rule(copy.deepcopy(model)).to(self.device, dtype).eval()
        self.space = ParamSpace.of(self.model)
        self.stats_space = ParamSpace.of_buffers(self.model)
        self.running = None if self.stats_space is None else self.stats_space.from_module(self.model).clone()
        self.eval_batch = eval_batch
        self.chunk_size = chunk_size
        self._feature_view = FeatureView(self.model)
        self.precision = Precision(precision, self.device.type)
        self.precision.check_dtype(dtype)
        self.client_axis = ClientAxis.resolve(client_axis, self.model, self.device)
        use_kernel(self.model, self.client_axis.lstm_kernel)  # LSTM layers only
        if self.client_axis.lstm is not None and self.precision.mode == "bf16":
            raise ValueError(
                f"engine.client_axis={client_axis!r} writes the LSTM's step out in the engine's dtype, not "
                "under engine.precision='bf16': use client_axis 'loop' (or 'auto') for bf16"
            )
        self.model_key = model_key  # equal for equal architectures (:meth:`stack_identity`; None: never)
        self.trainer: Trainer = self._own_trainer(kind)
        self._padded = {split: data.padded(split) for split in SPLITS}
        self._counts = {split: c.cpu().numpy() for split, (_, c) in self._padded.items()}
        self._flat = {
            split: (
                torch.cat(data.client_indices(split)),
                torch.repeat_interleave(torch.arange(data.num_clients, device=self.device), counts),
            )
            for split, (_, counts) in self._padded.items()
        }

    def _own_trainer(self, kind: str) -> Trainer:
        """The engine's ``kind`` trainer (``TRAINERS``) of its model and data, on its client axis and in its
        precision."""
        data = self.data
        if kind == "batched":
            return BatchedTrainer(
                self.model,
                self.space,
                data.inputs,
                data.y,
                self.chunk_size,
                self.client_axis,
                self.stats_space,
                self.precision,
            )
        return SequentialTrainer(
            self.model, self.space, data.inputs, data.y, self.stats_space, self.precision
        )

    def use_trainer(self, wrap: Callable[[Trainer], Trainer]) -> None:
        """Train through ``wrap(trainer)`` from now on (``train``, ``train_pooled`` and ``stack`` call its
        ``train`` and ``stack``): the rows executor's meeting (``sim/rows/``)."""
        self.trainer = wrap(self.trainer)

    def stack_identity(self) -> Hashable | None:
        """What another engine must share for the clients of both to train as rows of one stack (runs as
        rows, ``sim/rows/``): the same sample pool and labels (tensors), ``model_key``, dtype, device, client
        axis and precision. None: never (no ``model_key``, or a model that draws dropout masks from torch's
        generator)."""
        if self.model_key is None or draws_from_torch(self.model):
            return None
        return (
            id(self.data.x),
            id(self.data.y),
            self.model_key,
            self.dtype,
            str(self.device),
            self.client_axis.name,
            self.precision.mode,
        )

    # -- parameters --------------------------------------------------------------------------------------
    def init_params(self) -> torch.Tensor:
        return self.space.from_module(self.model).clone()

    @property
    def buffers(self) -> dict[str, torch.Tensor]:
        """The global running statistics as the model's buffers (empty without BatchNorm)."""
        if self.running is None or self.stats_space is None:
            return {}
        return self.stats_space.unflatten(self.running)

    def set_running_stats(self, running: torch.Tensor | None) -> None:
        """Make ``running`` ``[Q]`` the global running statistics every evaluation uses."""
        if (running is None) != (self.running is None):
            raise ValueError("running statistics are given exactly for models with BatchNorm layers")
        self.running = running

    def counts(self, split: str = "train") -> np.ndarray:
        return self._counts[split]

    # -- local training ----------------------------------------------------------------------------------
    def train(
        self,
        clients: np.ndarray,
        start: torch.Tensor,
        spec: LocalSpec,
        seed: int,
        work: np.ndarray | None = None,
    ) -> LocalResult:
        """Local training of ``clients`` from ``start`` (``[P]`` shared or ``[K, P]``): every step of every
        client's schedule (``schedule``), the stack stepped to the end (``client_stack.py``).

        ``work`` ``[K]``: the fraction f_k of its scheduled steps each client completes (stragglers,
        ``sim/faults.py``): only its first ⌈f_k K_k⌉ minibatches of the same schedule; None = all.
        """
        return self.trainer.train(start, spec, self.schedule(clients, spec, seed, work), self.running)

    def train_pooled(
        self, clients: np.ndarray, start: torch.Tensor, spec: LocalSpec, seed: int
    ) -> LocalResult:
        """Local training of one model from ``start`` ``[P]`` on the union of ``clients``' training samples:
        one minibatch stream over the pooled data (``batches.py``), as one client holding all of them
        (Centralized). Returns a one-row result."""
        lists = self.data.client_indices("train")
        pool = torch.cat([lists[k] for k in np.asarray(clients)])
        schedule = draw_schedule(
            pool[None],
            np.array([len(pool)]),
            spec.batch_size,
            steps=spec.steps,
            epochs=spec.epochs,
            seed=seed,
            dtype=self.dtype,
        )
        return self.trainer.train(start, spec, schedule, self.running)

    def stack(
        self,
        clients: np.ndarray,
        start: torch.Tensor,
        spec: LocalSpec,
        seed: int,
        work: np.ndarray | None = None,
        running: torch.Tensor | None = None,
    ) -> ClientStack:
        """The clients' local-training state at ``start``, to be advanced step by step
        (``client_stack.py``): the same minibatch streams as ``train`` with the same arguments. ``running``:
        each client's own BatchNorm running statistics ``[K, Q]`` (default: every client starts from the
        global ones)."""
        running = self.running if running is None else running
        return self.trainer.stack(start, spec, self.schedule(clients, spec, seed, work), running)

    def schedule(
        self, clients: np.ndarray, spec: LocalSpec, seed: int, work: np.ndarray | None = None
    ) -> BatchSchedule:
        """The clients' minibatch streams for one round (``batches.py``), truncated for stragglers."""
        clients = np.asarray(clients)
        index, _ = self._padded["train"]
        schedule = draw_schedule(
            index[to_device(clients, self.device)],
            self._counts["train"][clients],
            spec.batch_size,
            steps=spec.steps,
            epochs=spec.epochs,
            seed=seed,
            dtype=self.dtype,
        )
        if work is not None:
            schedule = truncate_schedule(schedule, completed_steps(schedule.active.sum(axis=1), work))
        return schedule

    # -- forward passes ----------------------------------------------------------------------------------
    def eval_mode(self) -> None:
        """Evaluations run in eval mode (local training leaves the model in train mode)."""
        if self.model.training:
            self.model.eval()

    def logits(self, w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        self.eval_mode()
        return functional_call(self.model, (self.space.unflatten(w), self.buffers), (x,))

    @_in_precision
    def losses(
        self,
        w: torch.Tensor,
        clients: np.ndarray | None = None,
        split: str = "train",
        loss: SampleLoss | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean loss and accuracy (fraction) of each client on its whole ``split``.

        ``w`` is one model ``[P]`` (evaluated on every listed client) or per-client models ``[K, P]``;
        ``loss``: the per-sample loss (``LocalSpec.loss``; None = ``local.cross_entropy``).
        """
        clients = np.arange(self.data.num_clients) if clients is None else np.asarray(clients)
        sample_loss = loss or cross_entropy
        if w.dim() == 2:
            return self._losses_stacked(w, clients, split, sample_loss)
        idx, owner = self._client_samples(clients, split)
        loss_sum = torch.zeros(len(clients), dtype=self.dtype, device=self.device)
        hits = torch.zeros_like(loss_sum)
        with torch.no_grad():
            for lo in range(0, len(idx), self.eval_batch):
                part = slice(lo, lo + self.eval_batch)
                out = self.logits(w, self.data.inputs(idx[part], self.dtype))
                y = self.data.y[idx[part]]
                loss_sum.index_add_(0, owner[part], sample_loss(out, y))
                hits.index_add_(0, owner[part], (out.argmax(-1) == y).to(self.dtype))
        n = to_device(self._counts[split][clients], self.device, self.dtype).clamp_min(1)
        return loss_sum / n, hits / n

    def _client_samples(self, clients: np.ndarray, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        flat_idx, flat_owner = self._flat[split]
        if len(clients) == self.data.num_clients and (clients == np.arange(len(clients))).all():
            return flat_idx, flat_owner
        lists = self.data.client_indices(split)
        parts = [lists[k] for k in clients]
        owner = torch.repeat_interleave(
            torch.arange(len(clients), device=self.device),
            to_device([len(p) for p in parts], self.device),
        )
        return torch.cat(parts), owner

    def _chunk_shape(self, clients: np.ndarray, split: str, samples: int) -> tuple[int, int]:
        """(clients, samples per client) of :meth:`_padded_chunks`' chunks (the last ones may be smaller)."""
        width = max(int(self._counts[split][clients].max()), 1)
        kc = self.chunk_size or len(clients)
        return kc, max(1, min(width, samples // max(kc, 1)))

    def _padded_chunks(
        self, clients: np.ndarray, split: str, samples: int | None = None
    ) -> Iterator[tuple[slice, torch.Tensor, torch.Tensor]]:
        """Yield (rows, sample index [kc, cs], mask [kc, cs]) over client and sample chunks of at most
        ``samples`` samples (default ``eval_batch``)."""
        index, counts = self._padded[split]
        sel = to_device(clients, self.device)
        width = max(int(self._counts[split][clients].max()), 1)
        kc, cs = self._chunk_shape(clients, split, samples or self.eval_batch)
        cols = torch.arange(width, device=self.device)
        for lo in range(0, len(clients), kc):
            rows = slice(lo, min(lo + kc, len(clients)))
            idx = index[sel[rows], :width]
            mask = (cols < counts[sel[rows], None]).to(self.dtype)
            for c0 in range(0, width, cs):
                yield rows, idx[:, c0 : c0 + cs], mask[:, c0 : c0 + cs]

    def _losses_stacked(
        self, w: torch.Tensor, clients: np.ndarray, split: str, sample_loss: SampleLoss
    ) -> tuple[torch.Tensor, torch.Tensor]:
        def per_client(
            wk: torch.Tensor, x: torch.Tensor, y: torch.Tensor, m: torch.Tensor
        ) -> tuple[torch.Tensor, torch.Tensor]:
            out = self.logits(wk, x)
            return (sample_loss(out, y) * m).sum(), ((out.argmax(-1) == y) * m).sum()

        fn = client_map(per_client, self.client_axis.mapped)
        self.eval_mode()
        loss_sum = torch.zeros(len(clients), dtype=self.dtype, device=self.device)
        hits = torch.zeros_like(loss_sum)
        with torch.no_grad():
            for rows, idx, mask in self._padded_chunks(clients, split):
                ls, hs = fn(w[rows], self.data.inputs(idx, self.dtype), self.data.y[idx], mask)
                loss_sum[rows] += ls
                hits[rows] += hs.to(self.dtype)
        n = to_device(self._counts[split][clients], self.device, self.dtype).clamp_min(1)
        return loss_sum / n, hits / n

    def gradients(
        self, w: torch.Tensor, clients: np.ndarray, split: str = "train", loss: SampleLoss | None = None
    ) -> torch.Tensor:
        """Full-batch gradient ``[K, P]`` of each client's mean loss at ``w`` (``[P]`` or ``[K, P]``);
        ``loss``: the per-sample loss (``LocalSpec.loss``; None = ``local.cross_entropy``, whose closed form
        ``mlp_step.py`` has)."""
        return self.gradients_and_losses(w, clients, split, loss)[0]

    @_in_precision
    def gradients_and_losses(
        self, w: torch.Tensor, clients: np.ndarray, split: str = "train", loss: SampleLoss | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`gradients` and each client's mean loss ``[K]`` from the same pass: the loss :meth:`losses`
        gives, summed in another order.

        The LSTM's written-out step holds a chunk's clients at once, so its chunks have ``eval_batch / kc``
        samples (the memory of one client's call in the loop)."""
        clients = np.asarray(clients)
        sample_loss = loss or cross_entropy
        closed_form = self.client_axis.relu_mlp if loss is None else None
        samples, lstm = self.eval_batch, self.client_axis.lstm if loss is None else None
        if lstm is not None:
            samples //= max(1, min(self.chunk_size or len(clients), len(clients)))
            seq_len = self.data.x.shape[-1]
            if not self.client_axis.writes_out_lstm(
                self.model, *self._chunk_shape(clients, split, samples), seq_len
            ):
                samples, lstm = self.eval_batch, None

        def loss_sum(
            params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, m: torch.Tensor
        ) -> torch.Tensor:
            out = functional_call(self.model, (params, self.buffers), (x,))
            return (sample_loss(out, y) * m).sum()

        if closed_form is None and lstm is None:
            in_dims = (0 if w.dim() == 2 else None, 0, 0, 0)
            fn = client_grad_and_value(loss_sum, self.client_axis.mapped, in_dims=in_dims)
        out = torch.zeros(len(clients), self.space.size, dtype=self.dtype, device=self.device)
        loss_sums = torch.zeros(len(clients), dtype=self.dtype, device=self.device)
        self.eval_mode()
        for rows, idx, mask in self._padded_chunks(clients, split, samples):
            x, y = self.data.inputs(idx, self.dtype), self.data.y[idx]
            if closed_form is not None or lstm is not None:  # written out: the chunk's mean gradient
                kc, count = rows.stop - rows.start, mask.sum(1)  # × its sample count
                stacked = list(self.space.unflatten(w[rows] if w.dim() == 2 else w.expand(kc, -1)).values())
                if lstm is not None:
                    tensors, mean = lstm_gradient(lstm, stacked, x, y, mask, count)
                elif closed_form is not None:
                    g, mean = mlp_gradient(closed_form[0], stacked, x, y, mask, count)
                    tensors = g.tensors()
                grads, value = dict(zip(self.space.names, tensors, strict=True)), mean * count
            else:
                grads, value = fn(self.space.unflatten(w[rows] if w.dim() == 2 else w), x, y, mask)
            out[rows] += self.space.flatten(grads, batch_dims=1)
            loss_sums[rows] += value.detach()
        n = to_device(self._counts[split][clients], self.device, self.dtype).clamp_min(1)
        return out / n[:, None], loss_sums / n

    @_in_precision
    def features(
        self, w: torch.Tensor, clients: np.ndarray, split: str = "train", transform: Transform = "none"
    ) -> torch.Tensor:
        """Mean penultimate activation ``[K, D]`` of each client's samples (``model.features``), each sample's
        activation first mapped by ``transform`` (``statistics.TRANSFORMS``: Equitable-FL's activation vector
        is the mean of ``"log_softmax"``)."""
        clients = np.asarray(clients)
        check_option(transform, Transform, "transform")
        fn_h = TRANSFORMS[transform]

        def feat_sum(wk: torch.Tensor, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
            return (fn_h(self._features(wk, x)) * m[:, None]).sum(0)

        fn = client_map(feat_sum, self.client_axis.mapped, in_dims=(0 if w.dim() == 2 else None, 0, 0))
        self.eval_mode()
        out: torch.Tensor | None = None
        with torch.no_grad():
            for rows, idx, mask in self._padded_chunks(clients, split):
                part = fn(w[rows] if w.dim() == 2 else w, self.data.inputs(idx, self.dtype), mask)
                if out is None:
                    out = torch.zeros(len(clients), part.shape[-1], dtype=self.dtype, device=self.device)
                out[rows] += part
        if out is None:
            raise ValueError("features: no clients given")
        n = to_device(self._counts[split][clients], self.device, self.dtype)
        return out / n.clamp_min(1)[:, None]

    def _features(self, w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        params = {f"inner.{n}": t for n, t in self.space.unflatten(w).items()}
        buffers = {f"inner.{n}": t for n, t in self.buffers.items()}
        return functional_call(self._feature_view, (params, buffers), (x,))

    def _group_codes(self, idx: torch.Tensor, predicted: torch.Tensor) -> torch.Tensor:
        """Each sample's cell of the ``[A, y, ŷ]`` counts: 4 a + 2 y + ŷ."""
        sensitive = self.data.sensitive
        if sensitive is None or self.data.num_classes != 2:
            has = "no sensitive attribute" if sensitive is None else f"{self.data.num_classes} classes"
            raise ValueError(
                "group counts need a binary task whose samples carry a sensitive attribute (adult, compas); "
                f"{self.data.label()} has {has}"
            )
        return 4 * sensitive[idx] + 2 * self.data.y[idx] + predicted

    @_in_precision
    def group_counts(
        self, w: torch.Tensor, clients: np.ndarray | None = None, split: str = "train"
    ) -> torch.Tensor:
        """Each client's ``[A, y, ŷ]`` counts ``[K, 2, 2, 2]`` (int64) on its whole ``split``: how many of its
        samples of sensitive group a with label y the model predicts ŷ (the arg-max class), at ``w`` ``[P]``
        or at per-client models ``[K, P]`` (``metrics/parity.py`` turns them into SPD and EOD)."""
        clients = np.arange(self.data.num_clients) if clients is None else np.asarray(clients)
        out = torch.zeros(len(clients), 8, dtype=torch.int64, device=self.device)
        with torch.no_grad():
            if w.dim() == 2:
                fn = client_map(lambda wk, x: self.logits(wk, x).argmax(-1), self.client_axis.mapped)
                self.eval_mode()
                for rows, idx, mask in self._padded_chunks(clients, split):
                    codes = self._group_codes(idx, fn(w[rows], self.data.inputs(idx, self.dtype)))
                    out[rows].scatter_add_(1, codes, (mask > 0).to(torch.int64))
            else:
                idx, owner = self._client_samples(clients, split)
                for lo in range(0, len(idx), self.eval_batch):
                    part = idx[lo : lo + self.eval_batch]
                    codes = self._group_codes(
                        part, self.logits(w, self.data.inputs(part, self.dtype)).argmax(-1)
                    )
                    out.index_put_(
                        (owner[lo : lo + self.eval_batch], codes), torch.ones_like(codes), accumulate=True
                    )
        return out.view(len(clients), 2, 2, 2)

    @_in_precision
    def pooled_group_counts(self, w: torch.Tensor) -> torch.Tensor:
        """The ``[A, y, ŷ]`` counts ``[2, 2, 2]`` (int64) of one model on the pooled test set."""
        idx = self.data.pooled_test
        out = torch.zeros(8, dtype=torch.int64, device=self.device)
        with torch.no_grad():
            for lo in range(0, len(idx), self.eval_batch):
                part = idx[lo : lo + self.eval_batch]
                codes = self._group_codes(part, self.logits(w, self.data.inputs(part, self.dtype)).argmax(-1))
                out += torch.bincount(codes, minlength=8)
        return out.view(2, 2, 2)

    @_in_precision
    def pooled(self, w: torch.Tensor) -> tuple[float, float]:
        """Accuracy (fraction) and mean loss of one model on the pooled test set."""
        idx = self.data.pooled_test
        loss, hits = 0.0, 0.0
        with torch.no_grad():
            for lo in range(0, len(idx), self.eval_batch):
                part = idx[lo : lo + self.eval_batch]
                out = self.logits(w, self.data.inputs(part, self.dtype))
                y = self.data.y[part]
                loss += float(cross_entropy(out, y, reduction="sum"))
                hits += float((out.argmax(-1) == y).sum())
        n = max(len(idx), 1)
        return hits / n, loss / n


if TYPE_CHECKING:  # the interface an algorithm sees (``protocol.py``), checked by mypy
    _SERVES: type[ClientEngine] = Engine
