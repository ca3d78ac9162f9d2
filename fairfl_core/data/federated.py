"""The in-memory containers every experiment works on.

`Dataset` is one dataset as loaded (train and test pools, tensors in memory, images as uint8).
`FederatedDataset` is a dataset split over clients: per-client index tensors into one sample pool that
lives on the compute device, group ids per client, and the pooled test set.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import torch

__all__ = ["SPLITS", "Dataset", "FederatedDataset"]

SPLITS = ("train", "val", "test")  # the per-client index lists of a FederatedDataset


@dataclass
class Dataset:
    """A dataset held in memory.

    ``x_*`` are uint8 ``[N, C, H, W]`` images, int64 ``[N, L]`` token windows or float32 ``[N, D]`` features;
    ``y_*`` are int64 labels. ``owner_*`` give, for naturally partitioned data (FEMNIST writers,
    Shakespeare roles), the index of the sample's owner in ``owner_names``. ``sensitive_*`` give, for data
    with a binary sensitive attribute (Adult, COMPAS: ``tabular.py``), each sample's group, 0 or 1, named
    by ``sensitive_names`` (group 0 first); ``sensitive_attribute`` names the attribute (``"sex"``).
    """

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int
    source: str
    mean: tuple[float, ...] | None = None  # per-channel normalisation of uint8 images scaled to [0, 1]
    std: tuple[float, ...] | None = None
    owner_train: torch.Tensor | None = None
    owner_test: torch.Tensor | None = None
    owner_names: list[str] | None = None
    meta: dict = field(default_factory=dict)
    sensitive_train: torch.Tensor | None = None
    sensitive_test: torch.Tensor | None = None
    sensitive_names: list[str] | None = None
    sensitive_attribute: str | None = None

    def __post_init__(self) -> None:
        for split in ("train", "test"):
            x, y = getattr(self, f"x_{split}"), getattr(self, f"y_{split}")
            if len(x) != len(y):
                raise ValueError(f"{self.name}: x_{split} has {len(x)} rows but y_{split} has {len(y)}")
            s = getattr(self, f"sensitive_{split}")
            if s is not None and len(s) != len(y):
                raise ValueError(
                    f"{self.name}: sensitive_{split} has {len(s)} entries but y_{split} {len(y)}"
                )
        if (self.sensitive_train is None) != (self.sensitive_test is None):
            raise ValueError(f"{self.name}: give the sensitive attribute of both splits or of neither")

    @property
    def has_sensitive(self) -> bool:
        """Whether every sample carries a sensitive group (``sensitive_*``)."""
        return self.sensitive_train is not None

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, train={len(self.y_train)}, test={len(self.y_test)}, "
            f"input={self.input_shape}, classes={self.num_classes}, source={self.source!r})"
        )


@dataclass
class FederatedDataset:
    """A dataset split over clients.

    All samples (the train pool followed by the test pool) are in ``x``/``y``; clients hold int64 index
    tensors into them: ``client_train``, ``client_test`` and ``client_val`` (held-out validation samples,
    ``DataSpec.val_frac``; one empty tensor per client when there are none, the default). ``pooled_test``
    indexes the global (standard) test set. ``groups[k]`` is client k's group or cluster id (-1 when the
    partition has none). ``stand_in`` names the paper dataset this one replaces, when it does.
    ``sensitive`` (None for data without one) is each sample's group of the sensitive attribute
    ``sensitive_attribute`` (0 or 1, in the order of ``sensitive_names``), aligned with ``y``.
    """

    name: str
    x: torch.Tensor
    y: torch.Tensor
    num_classes: int
    client_train: list[torch.Tensor]
    client_test: list[torch.Tensor]
    pooled_test: torch.Tensor
    groups: torch.Tensor
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    client_names: list[str] | None = None
    group_names: list[str] | None = None
    stand_in: str | None = None
    source: str = ""
    meta: dict = field(default_factory=dict)
    client_val: list[torch.Tensor] = field(default_factory=list)
    sensitive: torch.Tensor | None = None
    sensitive_names: list[str] | None = None
    sensitive_attribute: str | None = None
    _normalised: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.client_val:
            self.client_val = [ix.new_empty(0) for ix in self.client_train]
        if len(self.client_val) != len(self.client_train):
            raise ValueError(
                f"{self.name}: client_val has {len(self.client_val)} index tensors but there are "
                f"{len(self.client_train)} clients; give one per client (empty for none) or leave it out"
            )
        if self.sensitive is not None and len(self.sensitive) != len(self.y):
            raise ValueError(
                f"{self.name}: sensitive has {len(self.sensitive)} entries but the pool {len(self.y)} samples"
            )

    # -- shape -------------------------------------------------------------------------------------------
    @property
    def num_clients(self) -> int:
        return len(self.client_train)

    @property
    def num_groups(self) -> int:
        return int(self.groups.max().item()) + 1 if len(self.groups) and self.groups.max() >= 0 else 0

    @property
    def device(self) -> torch.device:
        return self.x.device

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x.shape[1:])

    def train_sizes(self) -> np.ndarray:
        return np.array([len(ix) for ix in self.client_train], dtype=np.int64)

    def test_sizes(self) -> np.ndarray:
        return np.array([len(ix) for ix in self.client_test], dtype=np.int64)

    def val_sizes(self) -> np.ndarray:
        return np.array([len(ix) for ix in self.client_val], dtype=np.int64)

    @property
    def has_validation(self) -> bool:
        """Whether any client holds validation samples."""
        return any(len(ix) for ix in self.client_val)

    def label(self) -> str:
        """Display name, carrying the stand-in label wherever the dataset appears."""
        return f"{self.name} (stand-in for {self.stand_in})" if self.stand_in else self.name

    # -- tensors -----------------------------------------------------------------------------------------
    def to(self, device: torch.device | str) -> FederatedDataset:
        """Move the sample pool and all index tensors to ``device`` (once)."""
        device = torch.device(device)
        if self.x.device == device:
            return self
        return replace(
            self,
            x=self.x.to(device),
            y=self.y.to(device),
            client_train=[ix.to(device) for ix in self.client_train],
            client_test=[ix.to(device) for ix in self.client_test],
            client_val=[ix.to(device) for ix in self.client_val],
            pooled_test=self.pooled_test.to(device),
            groups=self.groups.to(device),
            sensitive=None if self.sensitive is None else self.sensitive.to(device),
        )

    def inputs(self, idx: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Model inputs for sample indices ``idx`` (any shape): uint8 images scaled and normalised.

        The whole pool is converted once per dtype and kept beside ``x``, so a local step only gathers
        (about 5% of a W1 round otherwise; ``benchmarks/README.md``).
        """
        if self.x.dtype == torch.uint8:
            if dtype not in self._normalised:
                self._normalised[dtype] = self._normalise(self.x, dtype)
            return _gather(self._normalised[dtype], idx)
        x = _gather(self.x, idx)
        return x.to(dtype) if x.is_floating_point() else x

    def use_pool(self, other: FederatedDataset) -> None:
        """Take ``other``'s sample pool, an equal one, and its normalised copies (runs as rows hold one copy,
        ``sim/rows/memory.py``)."""
        self.x, self._normalised = other.x, other._normalised

    def _normalise(self, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        x = x.to(dtype) / 255.0
        if self.mean is None:
            return x
        shape = (1,) * (x.dim() - len(self.input_shape)) + (-1,) + (1,) * (len(self.input_shape) - 1)
        mean = torch.tensor(self.mean, dtype=dtype, device=x.device).view(shape)
        std = torch.tensor(self.std, dtype=dtype, device=x.device).view(shape)
        return (x - mean) / std

    def client_indices(self, split: str = "train") -> list[torch.Tensor]:
        """Each client's index tensor of ``split`` (one of `SPLITS`)."""
        if split not in SPLITS:
            raise ValueError(f"split={split!r} must be one of {list(SPLITS)}")
        return getattr(self, f"client_{split}")

    def padded(self, split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
        """``[K, max_n]`` index matrix (padding repeats index 0) and the per-client counts."""
        lists = self.client_indices(split)
        counts = torch.tensor([len(ix) for ix in lists], dtype=torch.long, device=self.device)
        width = max(int(counts.max().item()), 1)
        out = torch.zeros(len(lists), width, dtype=torch.long, device=self.device)
        for k, ix in enumerate(lists):
            out[k, : len(ix)] = ix
        return out, counts

    # -- inspection ------------------------------------------------------------------------------------
    def sensitive_counts(self, split: str = "train") -> np.ndarray:
        """``[K, 2]`` number of samples of each sensitive group on each client (needs ``sensitive``)."""
        if self.sensitive is None:
            raise ValueError(
                f"{self.name} carries no sensitive attribute; load adult or compas (loader_options.sensitive)"
            )
        groups = self.sensitive.cpu().numpy()
        return np.stack(
            [np.bincount(groups[ix.cpu().numpy()], minlength=2) for ix in self.client_indices(split)]
        ).astype(np.int64)

    def class_counts(self, split: str = "train") -> np.ndarray:
        """``[K, C]`` number of samples of each class on each client."""
        labels = self.y.cpu().numpy()
        return np.stack(
            [
                np.bincount(labels[ix.cpu().numpy()], minlength=self.num_classes)
                for ix in self.client_indices(split)
            ]
        ).astype(np.int64)

    def describe(self):
        """One row per client: sizes (train, test, validation), group, number of classes and the majority
        class's share (train)."""
        import pandas as pd

        counts = self.class_counts("train")
        n_train = counts.sum(axis=1)
        groups = self.groups.cpu().numpy()
        return pd.DataFrame(
            {
                "client": self.client_names or [str(k) for k in range(self.num_clients)],
                "group": [self.group_names[g] if self.group_names and g >= 0 else int(g) for g in groups],
                "n_train": n_train,
                "n_test": self.test_sizes(),
                "n_val": self.val_sizes(),
                "classes": (counts > 0).sum(axis=1),
                "majority_share": counts.max(axis=1) / np.maximum(n_train, 1),
            }
        )

    def summary(self) -> dict:
        """Headline facts of the split: clients, samples, size and class spread, groups, stand-in label."""
        sizes = self.train_sizes()
        classes = (self.class_counts("train") > 0).sum(axis=1)
        groups = self.groups.cpu().numpy()

        def spread(a: np.ndarray) -> dict:
            return {"min": int(a.min()), "median": float(np.median(a)), "max": int(a.max())}

        return {
            "dataset": self.label(),
            "source": self.source,
            "partition": self.meta.get("partition"),
            "clients": self.num_clients,
            "train_samples": int(sizes.sum()),
            "test_samples": int(self.test_sizes().sum()),
            "val_samples": int(self.val_sizes().sum()),
            "pooled_test": len(self.pooled_test),
            "train_size": spread(sizes),
            "classes_per_client": spread(classes),
            "groups": {
                (self.group_names[g] if self.group_names else g): int((groups == g).sum())
                for g in np.unique(groups)
                if g >= 0
            },
        }

    def plot_label_distribution(self, ax=None, split: str = "train", kind: str = "bar"):
        """Per-client class counts as a stacked bar chart (``kind='bar'``) or a class x client heatmap
        (``kind='heatmap'``). Returns the matplotlib Axes; the title carries `label()`."""
        import matplotlib.pyplot as plt
        import seaborn as sns

        counts = self.class_counts(split)
        if ax is None:
            _, ax = plt.subplots(figsize=(max(6.0, 0.12 * self.num_clients), 3.5))
        if kind == "heatmap":
            sns.heatmap(counts.T, ax=ax, cmap="viridis", cbar_kws={"label": "samples"})
            ax.set_ylabel("class")
        elif kind == "bar":
            colours = sns.color_palette("husl", self.num_classes)
            bottom = np.zeros(self.num_clients)
            for c in range(self.num_classes):
                x = np.arange(self.num_clients)
                ax.bar(x, counts[:, c], bottom=bottom, width=1.0, color=colours[c], label=str(c))
                bottom += counts[:, c]
            ax.set_ylabel("samples")
            ax.set_xlim(-0.5, self.num_clients - 0.5)
            if self.num_classes <= 20:
                ax.legend(title="class", fontsize="small", bbox_to_anchor=(1.01, 1.0), loc="upper left")
        else:
            raise ValueError(f"kind={kind!r} must be 'bar' or 'heatmap'")
        ax.set_xlabel("client")
        ax.set_title(f"{self.label()}: class counts per client ({split})")
        return ax


def _gather(pool: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``pool[idx]`` for an index tensor of any shape, as one ``index_select`` (3× faster on CPU)."""
    return pool.index_select(0, idx.reshape(-1)).view(*idx.shape, *pool.shape[1:])
