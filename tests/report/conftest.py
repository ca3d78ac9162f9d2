"""Small synthetic results directories in the real store format (config.json, evals.jsonl, summary.json),
written through :class:`RunStore` with hand-chosen per-client accuracies; small published claims pages."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from fairfl_core import metrics
from fairfl_core.experiments.config import ExperimentConfig, config_hash
from fairfl_core.experiments.store import RunStore


def make_config(
    method: str,
    algorithm: str = "fedavg",
    seed: int = 0,
    data: str = "fashion_mnist",
    stand_in: str | None = None,
    params: dict | None = None,
    models: str = "own",
) -> ExperimentConfig:
    return ExperimentConfig.from_dict(
        {
            "name": method,
            "seed": seed,
            "algorithm": {"name": algorithm, "params": params or {}},
            "data": {"name": data, "partition": "shards", "num_clients": 4, "stand_in": stand_in},
            "train": {"rounds": 4},
            "eval": {"every": 2, "models": models},
        }
    )


def write_run(
    results_dir: Path,
    cfg: ExperimentConfig,
    evals: dict[int, tuple[float, list[float]]],
    status: str = "complete",
    personal: dict[int, list[float]] | None = None,
) -> Path:
    """A finished run of ``cfg``: ``evals`` maps round -> (global accuracy, per-client accuracies); the
    summary holds the fairness metrics of the last evaluation, as the runner writes it."""
    store = RunStore(Path(results_dir) / config_hash(cfg))
    store.open(cfg.to_dict())
    for t, (global_acc, acc) in sorted(evals.items()):
        rec = {
            "round": t,
            "global_acc": global_acc,
            "global_loss": 1.0,
            "client_acc": acc,
            "client_loss": [0.5] * len(acc),
            "wall_time": float(t),
        }
        if personal is not None:
            rec.update(personal_acc=personal[t], personal_loss=[0.4] * len(personal[t]))
        store.append("evals", rec)
    last_round = max(evals)
    global_acc, acc = evals[last_round]
    judged = personal[last_round] if personal is not None else acc
    global_model = metrics.fairness_summary(np.asarray(acc), global_acc=global_acc) | {"evaluated": "global"}
    label = f"{cfg.data.name} (stand-in for {cfg.data.stand_in})" if cfg.data.stand_in else cfg.data.name
    summary = {
        "status": status,
        "diverged_round": None,
        "name": cfg.name,
        "algorithm": cfg.algorithm.name,
        "dataset": label,
        "seed": cfg.seed,
        "rounds": last_round,
        "hash": store.path.name,
        "seconds_per_round": 0.01,
        "device": "cpu",
        **metrics.fairness_summary(np.asarray(judged), global_acc=global_acc),
        "evaluated": "personal" if personal is not None else "global",
        **({"global_model": global_model} if personal is not None else {}),
    }
    store.finish(summary)
    return store.path


def two_method_results(
    results_dir: Path, stand_in: str | None = None, seeds: int = 2
) -> list[ExperimentConfig]:
    """FedProx then FedAvg, seeds 0 and 1 (and 2 with ``seeds=3``), evaluated at rounds 0, 2 and 4 on 4
    clients.

    Final per-client accuracies (round 4) and global accuracies:
      FedProx seed 0: [60, 70, 80, 90] (var 125), global 74;  seed 1: [65, 75, 75, 85] (var 50), global 76
      FedAvg  seed 0: [40, 60, 80, 100] (var 500), global 70; seed 1: [50, 70, 70, 90] (var 200), global 72
      seed 2: FedProx [62.5, 72.5, 77.5, 87.5] (var 81.25), global 75; FedAvg [45, 65, 75, 95] (var 325),
      global 71 (global accuracy over 3 seeds: FedProx 75 ± 1, FedAvg 71 ± 1)
    """
    finals = {
        ("FedProx", 0): (74.0, [60.0, 70.0, 80.0, 90.0]),
        ("FedProx", 1): (76.0, [65.0, 75.0, 75.0, 85.0]),
        ("FedAvg", 0): (70.0, [40.0, 60.0, 80.0, 100.0]),
        ("FedAvg", 1): (72.0, [50.0, 70.0, 70.0, 90.0]),
    }
    if seeds == 3:
        finals[("FedProx", 2)] = (75.0, [62.5, 72.5, 77.5, 87.5])
        finals[("FedAvg", 2)] = (71.0, [45.0, 65.0, 75.0, 95.0])
    configs = []
    for (method, seed), final in finals.items():
        cfg = make_config(
            method,
            "fedprox" if method == "FedProx" else "fedavg",
            seed,
            stand_in=stand_in,
            params={"mu": 0.01} if method == "FedProx" else None,
        )
        write_run(
            results_dir,
            cfg,
            {0: (10.0, [10.0, 10.0, 10.0, 10.0]), 2: (50.0, [40.0, 50.0, 50.0, 60.0]), 4: final},
        )
        configs.append(cfg)
    return configs


def claims_page(root: Path, profile: str, page: str, rows: list[dict], paper: str = "FedEBA+") -> None:
    """A published page ``root/<profile>/<page>/`` of ``paper`` whose claims table holds ``rows``
    (:func:`claim_row`; kind paper unless a row says otherwise)."""
    folder = root / profile / page
    folder.mkdir(parents=True)
    (folder / "status.json").write_text(json.dumps({"status": "ok", "paper": paper}))
    table = pd.DataFrame(rows)
    kind = table["kind"].fillna("paper") if "kind" in table else "paper"
    table.assign(kind=kind, result=table["verdict"], source='§6: "a sentence"').to_csv(
        folder / "claims.csv", index=False
    )


def claim_row(claim: str, verdict: str, share: float, dataset: str = "FashionMNIST", **more) -> dict:
    """One claims-table row of the paper's model on real data at ``share`` of the paper's rounds."""
    model = "the paper's (mlp)"
    return {"claim": claim, "dataset": dataset, "verdict": verdict, "rounds_share": share, "model": model,
            "data": "real", **more}  # fmt: skip
