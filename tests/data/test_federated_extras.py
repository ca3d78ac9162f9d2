"""FederatedDataset inspection helpers on a hand-made split."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from fairfl_core.data.federated import FederatedDataset


@pytest.fixture
def fed() -> FederatedDataset:
    # labels of the pool: train 0..7, test 8..11
    y = torch.tensor([0, 0, 0, 1, 2, 2, 1, 1, 0, 1, 2, 2])
    return FederatedDataset(
        name="hand",
        x=torch.zeros(12, 1, 2, 2, dtype=torch.uint8),
        y=y,
        num_classes=3,
        client_train=[torch.tensor([0, 1, 2, 3]), torch.tensor([4, 5]), torch.tensor([6, 7])],
        client_test=[torch.tensor([8]), torch.tensor([10, 11]), torch.tensor([9])],
        pooled_test=torch.arange(8, 12),
        groups=torch.tensor([0, 1, 1]),
        client_names=["a", "b", "c"],
        group_names=["small", "big"],
        stand_in="CIFAR-10",
        meta={"partition": "hand"},
    )


def test_class_counts(fed):
    assert fed.class_counts().tolist() == [[3, 1, 0], [0, 0, 2], [0, 2, 0]]
    assert fed.class_counts("test").tolist() == [[1, 0, 0], [0, 0, 2], [0, 1, 0]]
    assert fed.class_counts("val").tolist() == [[0, 0, 0]] * 3  # no validation split: empty per client
    with pytest.raises(ValueError, match=r"split='dev' must be one of \['train', 'val', 'test'\]"):
        fed.class_counts("dev")


def test_describe_and_summary(fed):
    table = fed.describe()
    assert table["client"].tolist() == ["a", "b", "c"]
    assert table["group"].tolist() == ["small", "big", "big"]
    assert table["n_train"].tolist() == [4, 2, 2] and table["n_test"].tolist() == [1, 2, 1]
    assert table["classes"].tolist() == [2, 1, 1]
    np.testing.assert_allclose(table["majority_share"], [0.75, 1.0, 1.0])
    facts = fed.summary()
    assert facts["dataset"] == "hand (stand-in for CIFAR-10)"
    assert facts["train_size"] == {"min": 2, "median": 2.0, "max": 4}
    assert facts["classes_per_client"] == {"min": 1, "median": 1.0, "max": 2}
    assert facts["groups"] == {"small": 1, "big": 2} and facts["test_samples"] == 4 and facts["clients"] == 3


@pytest.mark.parametrize("kind", ["bar", "heatmap"])
def test_plot_label_distribution(fed, kind):
    ax = fed.plot_label_distribution(kind=kind)
    assert "stand-in for CIFAR-10" in ax.get_title()
    if kind == "bar":  # one stacked bar per (class, client); heights are the counts
        heights = [p.get_height() for p in ax.patches]
        assert heights == [3, 0, 0, 1, 0, 2, 0, 2, 0]
    with pytest.raises(ValueError, match="kind='pie'"):
        fed.plot_label_distribution(kind="pie")
    plt.close("all")


def test_inputs_scale_and_normalise_uint8_images_per_channel(fed):
    from dataclasses import replace

    x = torch.zeros(12, 2, 1, 1, dtype=torch.uint8)
    x[3, 0], x[3, 1] = 51, 255  # 0.2 and 1.0 after scaling
    data = replace(fed, x=x, mean=(0.1, 0.5), std=(0.5, 0.25))
    out = data.inputs(torch.tensor([[3, 0]]), torch.float64)
    assert out.shape == (1, 2, 2, 1, 1) and out.dtype == torch.float64
    assert out[0, 0].flatten().tolist() == pytest.approx([(0.2 - 0.1) / 0.5, (1.0 - 0.5) / 0.25])
    assert out[0, 1].flatten().tolist() == pytest.approx([-0.1 / 0.5, -0.5 / 0.25])
    assert data.inputs(torch.tensor([0]), torch.float32).dtype == torch.float32  # one cache per dtype


def test_validation_indices_are_a_third_split(fed):
    from dataclasses import replace

    assert not fed.has_validation and fed.val_sizes().tolist() == [0, 0, 0]
    val = replace(
        fed, client_val=[torch.tensor([3]), torch.tensor([], dtype=torch.long), torch.tensor([6, 7])]
    )
    assert val.has_validation and val.val_sizes().tolist() == [1, 0, 2]
    assert val.class_counts("val").tolist() == [[0, 1, 0], [0, 0, 0], [0, 2, 0]]
    index, counts = val.padded("val")
    assert index.tolist() == [[3, 0], [0, 0], [6, 7]] and counts.tolist() == [1, 0, 2]
    assert val.describe()["n_val"].tolist() == [1, 0, 2] and val.summary()["val_samples"] == 3
    moved = val.to("meta")
    assert [ix.device.type for ix in moved.client_val] == ["meta"] * 3
    with pytest.raises(ValueError, match="client_val has 2 index tensors but there are 3 clients"):
        replace(fed, client_val=[torch.tensor([3]), torch.tensor([6])])
