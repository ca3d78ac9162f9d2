"""The papers' own numbers, one cited CSV per paper: ``fairfl_core/papers/<paper>/results.csv`` (format:
``fairfl_core/papers/README.md``).

Each row is one printed cell: ``paper, table, dataset, method, metric, value, std, source`` where ``metric``
is a summary key of :func:`fairfl_core.metrics.fairness_summary` (``global_acc``, ``var``, ``worst5``, ...)
and ``source`` cites the table, row and column the number was copied from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from fairfl_core.experiments.profiles import Experiment, PaperTable
from fairfl_core.report.tables import METRIC_LABELS, format_mean_std, results_table

__all__ = [
    "LEFT_OUT",
    "PAPER_COLUMNS",
    "PAPERS_DIR",
    "PaperTableResult",
    "experiment_paper_values",
    "load_paper_results",
    "missing_reasons",
    "paper_cell",
    "paper_table",
    "printed",
    "paper_values",
    "with_missing_rows",
]

PAPERS_DIR = Path(__file__).resolve().parent.parent / "papers"
RESULTS_FILE = "results.csv"
PAPER_COLUMNS = ("paper", "table", "dataset", "method", "metric", "value", "std", "source")


def load_paper_results(paper: str, directory: str | Path = PAPERS_DIR) -> pd.DataFrame:
    """All printed numbers of ``paper`` (``<directory>/<paper>/results.csv``), checked: every column present,
    text fields filled, ``value`` numeric, ``std`` numeric or empty, no cell listed twice."""
    directory = Path(directory)
    path = directory / paper / RESULTS_FILE
    if not path.exists():
        known = sorted(p.parent.name for p in directory.glob(f"*/{RESULTS_FILE}"))
        raise FileNotFoundError(
            f"no paper results {path}; available papers: {known} "
            f"(add {paper}/{RESULTS_FILE} in the format of {directory / 'README.md'})"
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
        raise ValueError(f"{path}: column 'paper' must be {paper!r} (the folder's name) in every row")
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


def printed(paper: str, table: str, dataset: str, method: str, metric: str) -> tuple[float, float]:
    """One printed cell of ``papers/<paper>/results.csv``: (value, std; NaN where it prints none); a clear
    error when the paper prints no such cell."""
    v = load_paper_results(paper)
    hit = v[
        (v["table"] == table) & (v["dataset"] == dataset) & (v["method"] == method) & (v["metric"] == metric)
    ]
    if hit.empty:
        raise KeyError(f"papers/{paper}/results.csv prints no {table} / {dataset} / {method} / {metric}")
    return float(hit["value"].iloc[0]), float(hit["std"].iloc[0])


def experiment_paper_values(
    experiment: Experiment, runs: pd.DataFrame, directory: str | Path = PAPERS_DIR
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
            f"paper results papers/{ref.paper}/results.csv have no rows for {ref.table!r} (experiment "
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


def paper_values(experiment: Experiment, runs: pd.DataFrame, tables: tuple[str, ...]) -> pd.DataFrame:
    """The paper numbers of ``experiment``'s runs from several tables (first table wins for a cell printed
    twice), e.g. Table 16 with Table 7's α = 0, 0.5, 0.9 rows."""
    cited = _cited(experiment)
    parts = [
        experiment_paper_values(replace(experiment, paper=replace(cited, table=t)), runs) for t in tables
    ]
    return pd.concat(parts, ignore_index=True).drop_duplicates(["dataset", "method", "metric"])


def _cited(experiment: Experiment) -> PaperTable:
    """The paper table ``experiment`` reproduces; a clear error when it cites none."""
    if experiment.paper is None:
        raise ValueError(f"experiment {experiment.name!r} cites no paper table (Experiment.paper is None)")
    return experiment.paper


LEFT_OUT = "not run: left out at this profile (see its description), run at paper"


def missing_reasons(
    experiment: Experiment,
    methods_run: Iterable[str],
    failed: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
    left_out: str = LEFT_OUT,
) -> dict[str, str]:
    """Why each paper row of ``experiment`` has no reproduced number: ``extra`` (paper row → reason, e.g.
    not implemented), the experiment's methods whose label is not in ``methods_run`` (``left_out``: by
    default, left out at this profile) and ``failed`` (method label → error of its run)."""
    done, failed = set(methods_run), dict(failed or {})
    reasons = dict(extra or {})
    for m in experiment.method_list():
        if m.paper_row and m.label in failed:
            reasons[m.paper_row] = f"run failed: {failed[m.label]}"
        elif m.paper_row and m.label not in done:
            reasons[m.paper_row] = left_out
    return reasons


def with_missing_rows(
    table: pd.DataFrame,
    runs: pd.DataFrame,
    experiment: Experiment,
    reasons: Mapping[str, str],
    paper_table: str | None = None,
    decimals: int = 2,
) -> pd.DataFrame:
    """``table`` (from ``results_table``) plus one row per dataset and paper row of ``reasons``: the paper's
    numbers of ``paper_table`` (default the experiment's; ``decimals`` as in ``results_table``), the
    reason's first words in every reproduced column and the reason in ``note``. The row is named by the
    method's label when the experiment has one for that paper row. Rows are never silently dropped: the
    methods the paper compares but we do not run (``NOT_IMPLEMENTED``, appendix-specific reasons) get one."""
    cited = _cited(experiment)
    values = load_paper_results(cited.paper)
    values = values[values["table"] == (paper_table or cited.table)]
    labels = {m.paper_row: m.label for m in experiment.method_list() if m.paper_row}
    reproduced = [c.removesuffix(" reproduced") for c in table if c.endswith(" reproduced")]
    metric_of = {METRIC_LABELS.get(m, m): m for m in set(values["metric"]) | set(METRIC_LABELS)}
    rows = []
    for data, stand_in, label in runs[["data", "stand_in", "dataset"]].drop_duplicates().itertuples(False):
        paper_dataset = stand_in if isinstance(stand_in, str) and stand_in else cited.datasets[data]
        here = values[values["dataset"] == paper_dataset]
        for row_name, reason in reasons.items():
            row = {"dataset": label, "method": labels.get(row_name, row_name), "seeds": 0, "note": reason}
            for column in reproduced:
                row[f"{column} reproduced"] = reason.split(":")[0]
                hit = here[(here["method"] == row_name) & (here["metric"] == metric_of.get(column, column))]
                if f"{column} paper" in table and len(hit):
                    value, std = hit["value"].iloc[0], hit["std"].iloc[0]
                    row[f"{column} paper"] = format_mean_std(value, std, decimals)
            rows.append(row)
    return pd.concat([table.assign(note=""), pd.DataFrame(rows)], ignore_index=True).fillna("")


class PaperTableResult(NamedTuple):
    """What :func:`paper_table` returns: the display ``table`` and the ``paper`` values it was built from (the
    ``experiment_paper_values`` frame that :func:`~fairfl_core.report.claims.check_claims` takes)."""

    table: pd.DataFrame
    paper: pd.DataFrame


def paper_table(
    experiment: Experiment,
    runs: pd.DataFrame,
    metrics: Iterable[str],
    *,
    table: str | None = None,
    extra: Mapping[str, str] | None = None,
    failed: Mapping[str, str] | None = None,
    left_out: str = LEFT_OUT,
    decimals: int = 2,
    columns: Mapping[str, Mapping[str, str]] | None = None,
) -> PaperTableResult:
    """A paper's table reproduced: ``runs``' mean ± std of ``metrics`` beside the paper's numbers of ``table``
    (default: the experiment's), then one row per paper row without a number (``extra``: paper row → reason,
    e.g. not implemented; ``failed``: method → error; the experiment's other methods: ``left_out``); an
    experiment that cites no paper table gets the reproduced rows only. ``columns`` adds columns before the
    missing rows: name → {method label: cell} ("" for other methods)."""
    paper = (
        experiment_paper_values(experiment, runs)
        if table is None
        else paper_values(experiment, runs, (table,))
    )
    result = results_table(runs, metrics=metrics, paper=paper, decimals=decimals)
    for name, cells in (columns or {}).items():
        result[name] = [cells.get(m, "") for m in result["method"]]
    if experiment.paper is None:
        return PaperTableResult(result, paper)
    reasons = missing_reasons(experiment, runs["method"], failed, extra, left_out)
    return PaperTableResult(with_missing_rows(result, runs, experiment, reasons, table, decimals), paper)


def paper_cell(
    paper: pd.DataFrame | None,
    method: str,
    metric: str,
    dataset: str | None = None,
    default: float | None = None,
) -> float | None:
    """The paper's printed value of one cell of an ``experiment_paper_values`` frame (``dataset`` None: any
    dataset's first), or ``default`` when the paper prints none."""
    if paper is None or paper.empty:
        return default
    hit = paper[(paper["method"] == method) & (paper["metric"] == metric)]
    if dataset is not None:
        hit = hit[hit["dataset"] == dataset]
    return default if hit.empty else float(hit["paper_value"].iloc[0])
