"""``client_map``: the loop computes what ``vmap`` computes, on pytrees, with shared (``None``) arguments."""

import pytest
import torch

from fairfl_core.sim.client_map import client_map


def _fn(params, x, scale):
    return {"y": (x @ params["w"]) * scale, "n": params["w"].sum()}, x.sum()


@pytest.mark.parametrize("in_dims", [0, (0, 0, None)])
def test_loop_equals_vmap(in_dims):
    g = torch.Generator().manual_seed(0)
    params = {"w": torch.randn(3, 4, 2, generator=g, dtype=torch.float64)}
    x = torch.randn(3, 5, 4, generator=g, dtype=torch.float64)
    scale = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64) if in_dims == 0 else torch.tensor(2.0)
    (out_v, sum_v) = client_map(_fn, "vmap", in_dims)(params, x, scale)
    (out_l, sum_l) = client_map(_fn, "loop", in_dims)(params, x, scale)
    assert out_l["y"].shape == (3, 5, 2) and out_l["n"].shape == sum_l.shape == (3,)
    assert torch.allclose(out_v["y"], out_l["y"]) and torch.allclose(out_v["n"], out_l["n"])
    assert torch.allclose(sum_v, sum_l)
    # by hand for the second client
    s1 = scale[1] if in_dims == 0 else scale
    assert torch.allclose(out_l["y"][1], x[1] @ params["w"][1] * s1)


def test_unknown_axis_is_named():
    with pytest.raises(ValueError, match="'vmap', 'bmm' or 'loop'"):
        client_map(_fn, "auto")
