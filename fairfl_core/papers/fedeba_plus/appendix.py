"""FedEBA+'s appendix (App. M) as its own bundle: the claims of Tables 9, 10, 11 and 13 on their experiments,
and of Tables 17–19 on the Table 1 runs, whose metrics (FAA, C_v's improvement) are computed here. Its
printed numbers are FedEBA+'s (``papers/fedeba_plus/results.csv``).

Each claim's source is the paper's sentence, quoted after its table ("Table 9, App. M.1: ..."), or the
package's observation (a comparison the paper does not state); the CIFAR-10 columns' stand-ins run on the
Fashion-MNIST columns' data, so there the paper's claims stay the paper's, "not checked (no offline data)",
the stand-in's direction beside them.
A Ditto row's global accuracy is its global model's, trained exactly as FedAvg's (``algorithms/ditto.py``):
FedAvg's claim decides it, so no claim compares it. Every FedEBA+ run is in update units, a smaller local
step than the baselines' (named in each claim's text). At the paper profile Tables 9, 10, 11 and 13 run
FedAvg at FedEBA+'s local step too, the matched-step control of their claims (Table 9's on its dispersion,
the std); the Table 1 runs' controls are compared on the Table 1 page."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fairfl_core import metrics
from fairfl_core.experiments.config import ExperimentConfig
from fairfl_core.experiments.profiles import Experiment, get_experiment
from fairfl_core.experiments.store import RunStore, client_accuracy_key
from fairfl_core.papers.fedeba_plus import TITLE
from fairfl_core.papers.fedeba_plus.appendix_experiments import (
    FAA_LOCAL_STEPS,
    OURS,
    TABLE13_NOT_IMPLEMENTED,
    TABLES17_19_NOT_RUN,
    client_optimum_losses,
)
from fairfl_core.papers.fedeba_plus.claims import TABLE1, UPDATE, better, step_note, with_reading
from fairfl_core.papers.fedeba_plus.experiments import FEDAVG_MATCHED
from fairfl_core.report.bundle import ClaimBuilder, PageTable, Paper, PaperRun, paper_rows, register_paper
from fairfl_core.report.claims import OBSERVATION, Claim
from fairfl_core.report.paper import experiment_paper_values, paper_table, paper_values, printed

__all__ = [
    "ACC_VAR",
    "BUNDLE",
    "TABLE1_TABLES",
    "TABLES",
    "TABLE_EXPERIMENTS",
    "AppendixTable",
    "appendix_tables",
    "by_table",
    "derived",
    "left_out",
    "printed_numbers",
    "table9_claims",
    "tables17_19_claims",
    "with_cv_improvement",
    "with_faa",
]


def with_cv_improvement(runs: pd.DataFrame, reference: str = "FedAvg") -> pd.DataFrame:
    """``runs`` plus ``cv_improvement`` (Table 18, in %): 100 (C_v^ref − C_v) / C_v^ref of each run against
    the mean C_v of the ``reference`` method's runs on the same dataset (NaN where it has none)."""
    ref = runs[runs["method"] == reference].groupby("dataset")["cv"].mean()
    improvement = [
        100 * metrics.cv_improvement(cv, ref[d]) if d in ref and pd.notna(cv) else np.nan
        for d, cv in zip(runs["dataset"], pd.to_numeric(runs["cv"]), strict=True)
    ]
    return runs.assign(cv_improvement=improvement)


def with_faa(runs: pd.DataFrame, local_steps: int) -> pd.DataFrame:
    """``runs`` plus ``faa`` (Table 17): ``metrics.faa`` of the clients' test losses at the last evaluation
    (the personalised models' for personalised methods) against F_i(x_i*) = ``client_optimum_losses`` of
    the run's data, model and seed (a cached ``local`` run beside it), or 0 with ``local_steps = 0``."""
    optimum: dict[str, np.ndarray] = {}
    values = []
    for path in runs["path"]:
        store = RunStore(path)
        last = store.records("evals")[-1]
        loss = np.asarray(last[client_accuracy_key(last).replace("_acc", "_loss")], dtype=float)
        if not local_steps:
            values.append(metrics.faa(loss, np.zeros_like(loss)))
            continue
        config = store.config()
        key = json.dumps([config[k] for k in ("data", "model", "seed")] + [config["train"]], sort_keys=True)
        if key not in optimum:
            optimum[key] = client_optimum_losses(
                ExperimentConfig.from_dict(config), local_steps, Path(path).parent
            )
        values.append(metrics.faa(loss, optimum[key]))
    return runs.assign(faa=values)


# -- the paper's sentences (copied from its text) ----------------------------------------------------------
TABLE9_STD = (
    'Table 9, App. M.1: "1) FedEBA+ consistently achieves a smaller variance of accuracy compared to other '
    'baselines, thus is fairer."'
)
TABLE9_WORST = (
    'Table 9, App. M.1: "2) FedEBA+ significantly improves the performance of the worst 5% clients"'
)
TABLE9_BEST = (
    'Table 9, App. M.1: "3) FedEBA+ performances steady in terms of best 5% clients." and "A significant '
    'improvement in worst 5% is achieved with relatively no compromise in best 5 %, thus is fairer."'
)
TABLE9_ACC = (
    'Table 9, App. M.1: "Table 9 shows FedEBA+ outperforms other baselines on CIFAR-10 using MLP model."'
)
SUPERIORITY = (
    '§6: "Additional results in Appendix M consistently demonstrate the superiority of FedEBA+, including: … '
)
PLUGINS = (
    "2) Performance of fairness algorithms integrated with advanced optimization methods like momentum "
    '(Table 10) and VARP (Table 11)."'
)
SOURCES = {
    "Table 10": f"Table 10, {SUPERIORITY}{PLUGINS}",
    "Table 11": f"Table 11, {SUPERIORITY}{PLUGINS}",
    "Table 13": 'Table 13, App. M.4: "The results of Table 13 reveal that (1) FedEBA+ maintains its '
    'superiority in accuracy and fairness even when there are local noisy labels"',
    "Table 18": 'Table 18, §6: "Similarly, Table 18 in Appendix M shows that FedEBA+ achieves nearly 4× '
    'better performance in C_v, capturing both fairness and accuracy simultaneously."',
    "Table 19": f"Table 19, {SUPERIORITY}3) Performance results under cosine similarity and entropy metrics "
    '(Table 19)."',
}
TABLE17 = (
    f'{OBSERVATION}: Table 17, App. M: the paper says only "Table 17 demonstrates that in our setting, '
    'FedEBA+ exhibits competitive performance under FAA metrics."; the comparison with each baseline is ours'
)
OWN_VARIANTS = ("FedEBA", "FedEBA+")  # the paper's own rows (Table 9's FedEBA, FedEBA+ α=0.5): not baselines


def _beats(
    experiment: Experiment, table: str, metric: str, what: str, source: str, op: str = "<", note: str = ""
) -> list[Claim]:
    """The claims "FedEBA+ (update units) has a ``what`` than <baseline>", one per method of ``experiment``
    whose row ``table`` prints in the experiment's column (none: the table does not print that column); a
    row of the paper's own method family (FedEBA, FedEBA+ at another α) is an observation, not a baseline;
    a Ditto row's global accuracy is FedAvg's run (module docstring): no claim. Each text names a difference
    of local steps (:func:`~fairfl_core.papers.fedeba_plus.claims.step_note`)."""
    shown = BUNDLE.values().query("table == @table")
    shown = set(shown.loc[shown["dataset"].isin(_columns(experiment)), "method"])
    return [
        Claim(
            f"FedEBA+ ({UPDATE}) has a {what} than {m.label}{step_note(experiment, OURS, m.label)}{note}",
            metric,
            OURS,
            op,
            m.label,
            source=f"{OBSERVATION}: {table}: {m.paper_row} is the paper's own method, not a baseline; "
            f"paper: {source}"
            if (m.paper_row or "").startswith(OWN_VARIANTS)
            else source,
        )
        for m in experiment.method_list()
        if m.label != OURS
        and m.paper_row in shown
        and not (metric == "global_acc" and m.algorithm == "ditto")
    ]


def _columns(experiment: Experiment) -> set[str]:
    return set(experiment.paper.datasets.values()) if experiment.paper else set()


def table9_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """Table 9 and App. M.1's text: FedEBA+ has a lower client-accuracy std and a higher global accuracy
    than every baseline, raises the worst 5 % over FedAvg and keeps its best 5 % ("steady", "relatively no
    compromise": non-inferiority, no more than FedAvg's printed best-5 % seed std in Table 9, 1.17 points,
    lost); against the matched-step FedAvg where the profile runs it (observations)."""
    ours_row = next(row for row, label in paper_rows(experiment).items() if label == OURS)
    steps = step_note(experiment, OURS, "FedAvg")
    mean, margin = printed(BUNDLE.printed_in, "Table 9", "CIFAR-10", "FedAvg", "best5")

    def change(metric: str) -> str:
        before, after = (BUNDLE.value("Table 9", "CIFAR-10", m, metric) for m in ("FedAvg", ours_row))
        return f"(Table 9: FedAvg {before:.2f} → FedEBA+ {after:.2f})"

    return [
        *_beats(experiment, "Table 9", "std", "lower client-accuracy std", TABLE9_STD),
        *_beats(experiment, "Table 9", "global_acc", "higher global accuracy", TABLE9_ACC, ">"),
        Claim(
            f"FedEBA+ ({UPDATE}) raises the worst-5% accuracy over FedAvg{steps}",
            "worst5",
            OURS,
            ">",
            "FedAvg",
            source=f"{TABLE9_WORST} {change('worst5')}",
        ),
        Claim(
            f"FedEBA+ ({UPDATE}) keeps FedAvg's best-5% accuracy ('steady': no more than {margin:g} points "
            f"lost){steps}",
            "best5",
            OURS,
            ">=",
            "FedAvg",
            tolerance=margin,
            tolerance_source=f"Table 9's printed seed std of FedAvg's best 5 % ({mean:.2f} ± {margin:.2f})",
            source=f"{TABLE9_BEST} {change('best5')}",
        ),
        *_matched_control(experiment, ("std", "global_acc")),
    ]


def _fairer_and_more_accurate(setting: str) -> ClaimBuilder:
    """Tables 10, 11 and 13: FedEBA+ has a lower variance and a higher global accuracy than every baseline,
    each ``setting``."""

    def claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
        table = experiment.paper.table if experiment.paper else ""
        return [
            *_beats(experiment, table, "var", f"lower variance {setting}", SOURCES[table]),
            *_beats(
                experiment, table, "global_acc", f"higher global accuracy {setting}", SOURCES[table], ">"
            ),
            *_matched_control(experiment),
        ]

    return claims


def _matched_control(
    experiment: Experiment, metrics_: tuple[str, ...] = ("var", "global_acc")
) -> list[Claim]:
    """FedEBA+ against FedAvg at its local step (observations), where ``experiment`` runs that control."""
    table = experiment.paper.table if experiment.paper else ""
    source = f"{OBSERVATION}: the matched-step control of {table}'s claims (FedAvg at FedEBA+'s local step)"
    return [
        claim
        for m in experiment.method_list()
        if m.label == FEDAVG_MATCHED.label
        for claim in better(experiment, f"FedEBA+ ({UPDATE})", OURS, m.label, source, metrics_)
    ]


def tables17_19_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """Tables 17–19 on a Table 1 column's runs: FedEBA+ has a lower C_v (Table 18, §6), angle to the all-ones
    vector and KL(a‖u) (Table 19, §6) than each baseline these tables print (Table 19 prints Fashion-MNIST
    only); its FAA against each (Table 17) is an observation: the paper calls it only "competitive". Table
    18's "nearly 4×" is against FedFV, which Table 1 does not run: not checked."""
    cv_note = (
        "; the paper's FashionMNIST C_v is its α=0.5 row, ours α=0.9" if "fmnist" in experiment.name else ""
    )
    return [
        *_beats(experiment, "Table 17", "faa", "lower FAA", TABLE17),
        *_beats(experiment, "Table 18", "cv", "lower C_v", SOURCES["Table 18"], note=cv_note),
        *_beats(experiment, "Table 19", "angle", "smaller angle to the all-ones vector", SOURCES["Table 19"]),
        *_beats(experiment, "Table 19", "kl", "smaller KL(a‖u)", SOURCES["Table 19"]),
    ]


TABLE1_TABLES = {
    "fedeba_table1_fmnist": ("Table 17", "Table 18", "Table 19"),
    "fedeba_table1_cifar10": ("Table 17", "Table 18"),
}
"""The appendix tables each Table 1 experiment's runs reproduce (Table 19 prints Fashion-MNIST only)."""
ACC_VAR = ("global_acc", "var", "worst5", "best5")
TABLE_EXPERIMENTS: dict[int, tuple[str, ...]] = {
    9: ("fedeba_table9_mlp",),
    10: ("fedeba_table10_momentum",),
    11: ("fedeba_table11_fedvarp",),
    13: ("fedeba_table13_noise_fmnist", "fedeba_table13_noise_cifar10"),
    **{table: tuple(TABLE1) for table in (17, 18, 19)},
}
"""The experiments each appendix table reads (Tables 17–19: the same Table 1 runs)."""
COLUMNS = {"CIFAR-10": ("fedeba_table13_noise_cifar10", "fedeba_table1_cifar10")}
"""The experiments of each dataset column but Fashion-MNIST's."""


def left_out(columns: list[str] | None = None, tables: list[int] | None = None) -> dict[str, str]:
    """The experiments a notebook run of the page leaves out, each with why: those of the columns
    ``columns`` does not name (None: every column) and of the tables ``tables`` does not name (None: every
    table). Tables 17, 18 and 19 read the same runs, so ``tables`` names all three or none."""
    if columns is not None and not set(columns) <= {"FashionMNIST", *COLUMNS}:
        raise ValueError(f"columns={columns!r}: choose None (both) or a list of ['FashionMNIST', 'CIFAR-10']")
    if tables is not None and not set(tables) <= set(TABLE_EXPERIMENTS):
        raise ValueError(f"tables={tables!r}: choose None (all) or a list of {list(TABLE_EXPERIMENTS)}")
    if tables is not None and len(set(tables) & {17, 18, 19}) not in (0, 3):
        raise ValueError(
            f"tables={tables!r}: Tables 17, 18 and 19 read the same Table 1 runs; name all three or none"
        )
    out: dict[str, str] = {}
    for column, cols in COLUMNS.items():
        if columns is not None and column not in columns:
            out |= dict.fromkeys(cols, f"not run (columns={columns!r})")
    for table, names in TABLE_EXPERIMENTS.items():
        if tables is not None and table not in tables:
            out |= {name: f"not run (tables={tables!r})" for name in names if name not in out}
    return out


@dataclass(frozen=True)
class AppendixTable:
    """One appendix table of the page: its ``title``, the experiments that feed it (``prefix`` of their
    names), its ``metrics``, the rows it keeps without runs (``extra``), the printed table it reproduces when
    not the experiment's own (``table``) and its rounding."""

    title: str
    prefix: str
    metrics: tuple[str, ...]
    extra: Mapping[str, str] | None = None
    table: str | None = None
    decimals: int = 2


TABLES = {
    "table9": AppendixTable(
        "FedEBA+ Table 9, CIFAR-10 with an MLP", "fedeba_table9_", ("global_acc", "std", "worst5", "best5")
    ),
    "table10": AppendixTable(
        "FedEBA+ Table 10, every method with server momentum 0.9 "
        "(x ← x + 0.1 v; heavy-ball rows: the control)",
        "fedeba_table10_",
        ACC_VAR,
    ),
    "table11": AppendixTable("FedEBA+ Table 11, every method with FedVARP", "fedeba_table11_", ACC_VAR),
    "table13": AppendixTable(
        "FedEBA+ Table 13, symmetric label noise 0.5", "fedeba_table13_", ACC_VAR, TABLE13_NOT_IMPLEMENTED
    ),
    "table17": AppendixTable(
        "FedEBA+ Table 17, FAA of the Table 1 runs",
        "fedeba_table1_",
        ("global_acc", "faa"),
        TABLES17_19_NOT_RUN,
        "Table 17",
        4,
    ),
    "table18": AppendixTable(
        "FedEBA+ Table 18, C_v of the Table 1 runs",
        "fedeba_table1_",
        ("global_acc", "std", "cv", "cv_improvement"),
        TABLES17_19_NOT_RUN,
        "Table 18",
        4,
    ),
    "table19": AppendixTable(
        "FedEBA+ Table 19, angle and KL of the Table 1 runs (Fashion-MNIST)",
        "fedeba_table1_fmnist",
        ("global_acc", "var", "angle", "kl"),
        TABLES17_19_NOT_RUN,
        "Table 19",
        4,
    ),
}
"""The page's tables by file name, in the paper's order."""


def derived(name: str, runs: pd.DataFrame, profile: str) -> pd.DataFrame:
    """The Table 1 runs with Table 17's FAA (F_i(x_i*) from ``FAA_LOCAL_STEPS`` local steps at this
    profile) and Table 18's C_v improvement over FedAvg; the other experiments' runs as they are."""
    if name not in TABLE1_TABLES:
        return runs
    return with_cv_improvement(with_faa(runs, FAA_LOCAL_STEPS[profile][TABLE1[name]]))


def printed_numbers(experiment: Experiment, runs: pd.DataFrame) -> pd.DataFrame:
    """The printed numbers an experiment's runs reproduce: every appendix table of a Table 1 experiment
    (:data:`TABLE1_TABLES`), else its own table."""
    tables = TABLE1_TABLES.get(experiment.name)
    if tables is None:
        return experiment_paper_values(experiment, runs)
    return pd.concat([paper_values(experiment, runs, (t,)) for t in tables], ignore_index=True)


def appendix_tables(page: PaperRun) -> dict[str, PageTable]:
    """Tables 9–11, 13 and 17–19 (:data:`TABLES`): each experiment's mean ± std over seeds beside the
    printed table it reproduces, with the rows it has no run for (why) and each FedEBA+ row's units of g̃."""
    out = {}
    for key, spec in TABLES.items():
        names = [n for n in page.runs if n.startswith(spec.prefix)]
        parts = []
        for name in names:
            experiment = get_experiment(name)
            table, _ = paper_table(
                experiment,
                page.runs[name],
                spec.metrics,
                table=spec.table,
                extra=spec.extra,
                failed=page.failed.get(name),
                decimals=spec.decimals,
            )
            parts.append(with_reading(table, experiment))
        if parts:
            out[key] = PageTable(pd.concat(parts, ignore_index=True).fillna(""), spec.title, tuple(names))
    return out


def by_table(page: PaperRun, claims: pd.DataFrame) -> pd.DataFrame:
    """The claims in the order of the appendix's tables, each with its ``table`` (cited first in its
    source)."""
    claims = claims.assign(table=claims["source"].str.extract(r"(Table \d+)", expand=False))
    return claims.sort_values(
        "table", key=lambda t: t.str.split().str[1].astype(int), kind="stable", ignore_index=True
    )


BUNDLE = register_paper(
    Paper(
        "fedeba_plus_appendix",
        title=TITLE,
        experiments=(
            "fedeba_table9_mlp",
            "fedeba_table10_momentum",
            "fedeba_table11_fedvarp",
            "fedeba_table13_noise_fmnist",
            "fedeba_table13_noise_cifar10",
            "fedeba_table1_fmnist",
            "fedeba_table1_cifar10",
        ),
        claim_builders={
            "fedeba_table9_mlp": table9_claims,
            "fedeba_table10_momentum": _fairer_and_more_accurate("with momentum"),
            "fedeba_table11_fedvarp": _fairer_and_more_accurate("with FedVARP"),
            "fedeba_table13_noise_": _fairer_and_more_accurate("under label noise"),
            "fedeba_table1_": tables17_19_claims,
        },
        printed_in="fedeba_plus",
        derive=derived,
        paper_numbers=printed_numbers,
        tables=appendix_tables,
        annotate_claims=by_table,
        shows_failed_runs=True,
        claims_title="FedEBA+ appendix claims",
        claims_decimals=4,
    )
)
