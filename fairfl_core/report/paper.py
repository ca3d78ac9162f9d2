"""The papers' own numbers, one cited CSV per paper in ``fairfl_core/paper_results/`` (format: its README).

Each row is one printed cell: ``paper, table, dataset, method, metric, value, std, source`` where ``metric``
is a summary key of :func:`fairfl_core.metrics.fairness_summary` (``global_acc``, ``var``, ``worst5``, ...)
and ``source`` cites the table, row and column the number was copied from.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fairfl_core.experiments.profiles import Experiment

__all__ = ["PAPER_COLUMNS", "PAPER_RESULTS_DIR", "experiment_paper_values", "load_paper_results"]

PAPER_RESULTS_DIR = Path(__file__).resolve().parent.parent / "paper_results"
PAPER_COLUMNS = ("paper", "table", "dataset", "method", "metric", "value", "std", "source")


def load_paper_results(paper: str, directory: str | Path = PAPER_RESULTS_DIR) -> pd.DataFrame:
    """All printed numbers of ``paper`` (``<directory>/<paper>.csv``), checked: every column present, text
    fields filled, ``value`` numeric, ``std`` numeric or empty, no cell listed twice."""
    directory = Path(directory)
    path = directory / f"{paper}.csv"
    if not path.exists():
        known = sorted(p.stem for p in directory.glob("*.csv"))
        raise FileNotFoundError(
            f"no paper results {path}; available papers: {known} "
            f"(add {paper}.csv in the format of {directory / 'README.md'})"
        )
    df = pd.read_csv(path, dtype={"table": str, "dataset": str, "method": str, "metric": str, "source": str})
    missing = [c for c in PAPER_COLUMNS if c not in df]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; required: {list(PAPER_COLUMNS)}")
    for col in ("paper", "table", "dataset", "method", "metric", "source"):
        empty = df.index[df[col].isna() | (df[col].astype(str).str.strip() == "")].tolist()
        if empty:
            raise ValueError(
                f"{path}: column {col!r} is empty in data row(s) {[i + 1 for i in empty]}; fill it"
            )
    if (df["paper"] != paper).any():
        raise ValueError(f"{path}: column 'paper' must be {paper!r} (the file name) in every row")
    for col in ("value", "std"):
        numeric = pd.to_numeric(df[col], errors="coerce")
        bad = df.index[numeric.isna() & (df[col].notna() if col == "std" else True)].tolist()
        if bad:
            raise ValueError(f"{path}: column {col!r} is not a number in data row(s) {[i + 1 for i in bad]}")
        df[col] = numeric
    key = ["table", "dataset", "method", "metric"]
    dup = df[df.duplicated(key, keep=False)]
    if len(dup):
        raise ValueError(
            f"{path}: the same cell is listed twice: {dup[key].drop_duplicates().values.tolist()}"
        )
    return df


def experiment_paper_values(
    experiment: Experiment, runs: pd.DataFrame, directory: str | Path = PAPER_RESULTS_DIR
) -> pd.DataFrame:
    """The paper numbers that ``experiment``'s runs reproduce, keyed like the results:
    ``dataset, data, method, metric, paper_value, paper_std, paper_dataset, source`` (``dataset`` is the
    runs' display label, so a stand-in run and a real run of the same ``data`` never share a number).

    A method is matched to the paper row named in its ``Method.paper_row``; a dataset to the paper column
    ``experiment.paper.datasets[data]``, or, for a stand-in run, to the dataset it stands in for.
    Empty when the experiment cites no paper table.
    """
    columns = ["dataset", "data", "method", "metric", "paper_value", "paper_std", "paper_dataset", "source"]
    if experiment.paper is None:
        return pd.DataFrame(columns=columns)
    ref = experiment.paper
    values = load_paper_results(ref.paper, directory)
    tables = sorted(values["table"].unique())
    values = values[values["table"] == ref.table]
    if values.empty:
        raise ValueError(
            f"paper results {ref.paper}.csv have no rows for {ref.table!r} (experiment "
            f"{experiment.name!r}); tables there: {tables}"
        )
    rows = {m.paper_row: m.label for m in experiment.method_list() if m.paper_row}
    datasets = (
        runs[["dataset", "data", "stand_in"]]
        .drop_duplicates()
        .assign(
            paper_dataset=lambda d: [
                s if isinstance(s, str) and s else ref.datasets.get(n, n)
                for n, s in zip(d["data"], d["stand_in"], strict=True)
            ]
        )
    )
    out = (
        values[values["method"].isin(rows)]
        .assign(method=lambda d: d["method"].map(rows))
        .rename(columns={"dataset": "paper_dataset", "value": "paper_value", "std": "paper_std"})
        .merge(datasets[["dataset", "data", "paper_dataset"]], on="paper_dataset")
    )
    return out[columns].reset_index(drop=True)
