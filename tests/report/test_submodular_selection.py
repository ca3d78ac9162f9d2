"""Table I's training loss from a run's records, and the claims' wiring."""

import json

import pandas as pd
import pytest

from fairfl_core.report import submodular_selection as R


def test_train_loss_is_the_mean_of_the_last_rounds(tmp_path):
    losses = [2.0, 1.0, 0.5, 0.4, 0.3, 0.2, 0.1]
    (tmp_path / "rounds.jsonl").write_text(
        "".join(
            json.dumps({"round": r, "diagnostics": {"train_loss": x}}) + "\n" for r, x in enumerate(losses)
        )
    )
    out = R.with_train_loss(pd.DataFrame({"path": [str(tmp_path)]}))
    assert out["train_loss"].iloc[0] == pytest.approx((0.5 + 0.4 + 0.3 + 0.2 + 0.1) / 5)


def test_table1_claims_compare_subtrunc_with_every_other_selector():
    claims = R.table1_claims("S", "U", {"DivFL": "D", "Random": "R", "Power-of-Choice": "P"})
    lower = [(c.method, c.than) for c in claims if c.metric == "std" and c.method == "S"]
    assert lower == [("S", "U"), ("S", "D"), ("S", "R"), ("S", "P")]
    assert all(c.op == ">=" for c in claims if c.metric == "global_acc")
