"""SubTrunc / UnionFL (arXiv 2408.13683): Table I's training loss, the selection diagnostics, the λ sweep per
reading of G's scale, and the §V claims on the experiments' method labels
(``papers/submodular_selection/experiments.py``).

"Client dissimilarity [%]" is read as the population standard deviation of the clients' test accuracies
(``std`` of ``metrics.fairness_summary``; the paper gives no formula); "Training Loss" as the mean local
minibatch loss of the selected clients over the last 5 rounds (the paper does not define it either); the rate
of convergence (§V-A: "as evidenced by their training loss") as the mean of the per-round training loss over
every round, the training-loss curve's area per round (``ln_loss_auc``, on a log scale so that "similar" is a
ratio).

Each claim quotes the paper's sentence with its place, and is checked once per page (readings.md).
The primary claims are §V-A's "SubTrunc and UnionFL outperform the baselines by achieving a lower overall
client dissimilarity score", which the abstract states ("revealing significant improvements in fairness as
measured by a client dissimilarity metric"). "Similar rate" and "comparable testing accuracy" are decided
against margins from the paper's own tables (:func:`similar_loss_factor`, :func:`comparable_margin`).
SubTrunc's claims are decided on its default reading of G's scale (:data:`experiments.READING`); on each
other reading that ran they are the package's observations. Where Table II's smallest λ runs are DivFL's
(:func:`is_divfl`) and its largest λ runs are Table I's SubTrunc runs, Table II's claims compare Table I's
runs again and are observations that name the Table I row deciding both sentences. A claim comparing two
runs that selected the same clients in every round of every seed is marked (:func:`mark_identical_selections`)
and no headline counts it. On the Fashion-MNIST stand-ins (no MNIST or CIFAR-10 offline) the MNIST column's
claims are decided on direction only (indicative); the CIFAR-10 column runs on the same data, so its paper
claims are "not checked (no offline data)", their direction in ``stand_in_result``
(``report.bundle.Paper.shares_data``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from fairfl_core.experiments.profiles import Experiment, Method, get_experiment
from fairfl_core.experiments.store import RunStore
from fairfl_core.papers.submodular_selection import TITLE
from fairfl_core.papers.submodular_selection import experiments as experiments
from fairfl_core.report.bundle import PageTable, Paper, PaperRun, paper_rows, register_paper
from fairfl_core.report.claims import NOT_CHECKED_OFFLINE, OBSERVATION, Claim, seed_outcome
from fairfl_core.report.paper import load_paper_results, printed
from fairfl_core.report.stats import Sample
from fairfl_core.report.tables import results_table

__all__ = [
    "BUNDLE",
    "CLAIM_METRICS",
    "IDENTICAL",
    "TABLE_METRICS",
    "Calibration",
    "calibrate",
    "claims_table",
    "comparable_margin",
    "is_divfl",
    "lambda_claims",
    "lambda_sweep",
    "mark_identical_selections",
    "marked_claims",
    "page_tables",
    "paper_random_accuracy",
    "phi_claims",
    "selection_agreement",
    "selection_diagnostics",
    "similar_loss_factor",
    "table1_claims",
    "window_claims",
    "with_loss_curve",
    "with_train_loss",
]


def with_train_loss(runs: pd.DataFrame, last: int = 5) -> pd.DataFrame:
    """``runs`` plus ``train_loss`` (Table I's: the mean over the last ``last`` rounds of the rounds' mean
    local loss) and ``ln_loss_auc`` (the rate: ln of the mean over every round of the rounds' mean local loss,
    the training-loss curve's area per round; NaN without losses)."""
    losses, curves = [], []
    for path in runs["path"]:
        rounds = [r["diagnostics"].get("train_loss") for r in RunStore(path).records("rounds")]
        values = np.asarray([x for x in rounds if x is not None], dtype=float)
        losses.append(float(values[-last:].mean()) if values.size else np.nan)
        curves.append(float(np.log(values.mean())) if values.size else np.nan)
    return runs.assign(train_loss=losses, ln_loss_auc=curves)


def with_loss_curve(curves: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``curves`` (``report.load_curves`` of ``runs``) plus ``train_loss``: the mean local loss of the round
    that ends at each evaluation (the training-loss curves; the paper shows dissimilarity over training in
    §V-A, "The dissimilarity evolution of our method ...")."""
    paths = dict(zip(runs["hash"], runs["path"], strict=True))
    per_run = {
        h: {r["round"]: r["diagnostics"].get("train_loss") for r in RunStore(p).records("rounds")}
        for h, p in paths.items()
    }
    loss = [per_run[h].get(r) for h, r in zip(curves["hash"], curves["round"], strict=True)]
    return curves.assign(train_loss=pd.to_numeric(pd.Series(loss, index=curves.index), errors="coerce"))


def selection_agreement(runs: pd.DataFrame, reference: str) -> pd.DataFrame:
    """How often each method picks what ``reference`` (e.g. DivFL) picks, run against run of the same seed
    over their common rounds: ``same_set`` (% of rounds with the identical set of clients) and ``overlap`` (%:
    mean share of a round's clients that the reference also selected)."""
    picks = {
        (m, seed): [set(r["selected"]) for r in RunStore(p).records("rounds")]
        for m, seed, p in zip(runs["method"], runs["seed"], runs["path"], strict=True)
    }
    rows = []
    for (method, seed), sets in picks.items():
        ref = picks.get((reference, seed))
        if ref is None:
            raise ValueError(f"no {reference!r} run of seed {seed} to compare {method!r} with")
        pairs = list(zip(sets, ref, strict=False))
        rows.append(
            {
                "method": method,
                "seed": seed,
                "rounds": len(pairs),
                "same_set": 100 * np.mean([a == b for a, b in pairs]),
                "overlap": 100 * np.mean([len(a & b) / len(b) for a, b in pairs]),
            }
        )
    return pd.DataFrame(rows)


IDENTICAL = "identical selections (not evidence)"
DIAGNOSTICS = (
    "steered_steps",
    "unsaturated_steps",
    "h_range_max",
    "g_gap_min",
    "g_gap_median",
)


def _same_picks(runs: pd.DataFrame, method: str, than: str) -> bool:
    """Whether the runs of ``method`` and ``than`` picked the same set of clients in every round of every
    common seed (False where either is not a run)."""
    methods = set(runs["method"])
    if method not in methods or than not in methods or method == than:
        return False
    agreement = selection_agreement(runs[runs["method"].isin([method, than])], than)
    mine = agreement[agreement["method"] == method]
    return bool(len(mine)) and bool((mine["same_set"] == 100).all())


def mark_identical_selections(claims: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``claims`` (``report.check_claims``) plus ``identical_selections``: whether the claim's two runs picked
    the same set of clients in every round of every common seed (then they are the same run, and
    :data:`IDENTICAL` replaces its class: in ``result``, or, for a paper claim not checked for want of its
    data, in ``stand_in_result``, its result staying "not checked (no offline data)"); False where the
    reference is not a run."""
    same = [_same_picks(runs, m, t) for m, t in zip(claims["method"], claims["than"], strict=True)]
    out = claims.assign(identical_selections=same)
    offline = out["identical_selections"] & (out["result"] == NOT_CHECKED_OFFLINE)
    out.loc[offline, "stand_in_result"] = IDENTICAL
    out.loc[out["identical_selections"] & ~offline, "result"] = IDENTICAL
    return out


def selection_diagnostics(runs: pd.DataFrame) -> pd.DataFrame:
    """Per SubTrunc run (one row per method and seed), its rounds' selection diagnostics
    (``algorithms/subtrunc.py``): the % of rounds where H changed a pick of G's (``steered_%``; the others
    are DivFL's rounds on the same gradients and draws), the mean number of greedy steps per round where H
    changed G's pick and where H was not yet saturated, the mean of H's largest spread, and the median over
    rounds of G's smallest and median best-vs-second gap."""
    rows = []
    for method, seed, path in zip(runs["method"], runs["seed"], runs["path"], strict=True):
        records = [r["diagnostics"] for r in RunStore(path).records("rounds")]
        records = [d for d in records if "steered_steps" in d]
        if not records:
            continue
        frame = pd.DataFrame(records, columns=list(DIAGNOSTICS)).astype(float)
        rows.append(
            {
                "method": method,
                "seed": seed,
                "rounds": len(frame),
                "steered_%": 100 * (frame["steered_steps"] > 0).mean(),
                "steered_steps": frame["steered_steps"].mean(),
                "unsaturated_steps": frame["unsaturated_steps"].mean(),
                "h_range_max": frame["h_range_max"].mean(),
                "g_gap_min": frame["g_gap_min"].median(),
                "g_gap_median": frame["g_gap_median"].median(),
            }
        )
    return pd.DataFrame(rows)


def _seed_sample(runs: pd.DataFrame, label: str, metric: str) -> Sample:
    """``metric`` of ``label``'s runs over seeds, each seed with its run's pairing key where ``runs`` has one
    (``report.results``: then runs of one seed that share partition, initial model and streams are paired)."""
    part = runs[(runs["method"] == label) & pd.to_numeric(runs[metric], errors="coerce").notna()]
    keys = part["pairing"] if "pairing" in part else pd.Series(None, index=part.index, dtype=object)
    return Sample.of(
        {int(s): float(v) for s, v in zip(part["seed"], part[metric], strict=True)},
        {int(s): k for s, k in zip(part["seed"], keys, strict=True) if isinstance(k, str)},
    )


def lambda_sweep(experiment: Experiment, runs: pd.DataFrame) -> pd.DataFrame:
    """Table II per reading of G's scale: for each λ run, the mean (over seeds) client dissimilarity and
    accuracy and the % of rounds where H changed a pick of DivFL's greedy (``steered_%``); then per reading
    the trend from the smallest to the largest λ (``std`` at the largest minus at the smallest; ``falls``:
    the class of "dissimilarity at the largest λ < at the smallest" on the per-seed values,
    ``report.claims.seed_outcome``, paired where the seeds' runs are, or :data:`IDENTICAL` where the two
    picked the same clients in every round; ``test``: which test and why)."""
    methods = {m.label: m for m in experiment.method_list()}
    diag = selection_diagnostics(runs).groupby("method")["steered_%"].mean()
    rows = []
    for label, part in runs.groupby("method", sort=False):
        m = methods[label]
        std = pd.to_numeric(part["std"], errors="coerce")
        rows.append(
            {
                "reading": experiments.reading_of(m),
                "lam": m.params["lam"],
                "method": label,
                "seeds": len(part),
                "std": std.mean(),
                "std_sd": std.std(),
                "global_acc": pd.to_numeric(part["global_acc"], errors="coerce").mean(),
                "steered_%": diag.get(label, float("nan")),
            }
        )
    table = pd.DataFrame(rows).sort_values(["reading", "lam"], kind="stable").reset_index(drop=True)
    trend = []
    for reading, part in table.groupby("reading", sort=False):
        low, high = part.iloc[0], part.iloc[-1]
        falls, test = "n/a", ""
        if len(part) > 1:
            outcome = seed_outcome(
                "<", _seed_sample(runs, high["method"], "std"), _seed_sample(runs, low["method"], "std")
            )
            same = _same_picks(runs, high["method"], low["method"])
            falls, test = (IDENTICAL if same else outcome.result), outcome.test
        trend.append(
            {
                "reading": reading,
                "trend": f"λ {low['lam']:g} → {high['lam']:g}",
                "std_change": high["std"] - low["std"],
                "falls": falls,
                "test": test,
            }
        )
    return table.merge(pd.DataFrame(trend), on="reading", how="left")


# -- claims ------------------------------------------------------------------------------------------------
# The paper's sentences each claim checks (arXiv 2408.13683), quoted as printed (the text file follows each λ
# with its LaTeX source; the quotes keep the λ), the package's reading after the quote where it needs one.
S_BASELINES = (
    '§V-A (Table I): "SubTrunc and UnionFL outperform the baselines by achieving a lower overall client '
    'dissimilarity score"; Abstract: "revealing significant improvements in fairness as measured by a client '
    'dissimilarity metric"'
)
S_LOWEST = (
    '§V-A (Table I): "with SubTrunc being able to consistently achieve the lowest score among all methods"'
)
S_RATE = (
    '§V-A (Table I): "both SubTrunc and UnionFL converge at a similar rate to the baseline methods as '
    'evidenced by their training loss"'
)
S_ACCURACY = (
    '§V-A (Table I): "while maintaining a comparable performance under testing accuracy" (read: no less '
    "accurate than the baseline by more than the baseline's printed seed spread)"
)
S_LAMBDA = (
    '§V-B (Table II): "as the values for λ get closer to zero, i.e. as the method approaches DivFL, the '
    'client dissimilarity score degrades, whereas as λ increases, the client dissimilarity improves" (read: '
    "the largest λ run against the smallest)"
)
S_LAMBDA_ACCURACY = (
    '§V-B (Table II): "while still maintaining a comparable testing accuracy across the gamut of λ values" '
    "(read: at the largest λ run no less accurate than at the smallest by more than the smallest's printed "
    "seed spread)"
)
S_WINDOW = (
    '§V-B (Table III): "Increasing the window size results in model’s that perform better under both a '
    'testing accuracy and client dissimilarity standpoint." (read: the longest window run against the '
    "shortest)"
)
S_PHI = (
    '§V-C (Table IV): "This new function was able to produce lower client dissimilarity scores across both '
    "datasets under non-iid conditions\" (the new function: φ = identity, against Table I's ln(1+x))"
)
BASELINES = ("DivFL", "Random", "Power-of-Choice")  # Table I's baselines (§V: "We benchmark ...")
OTHER_READINGS = (experiments.ALTERNATIVE, "normalised")  # of G's scale; READING gives the verdicts
CLAIM_METRICS = ("train_loss", "global_acc", "std", "ln_loss_auc")  # what the claims read (aggregate them)


def similar_loss_factor() -> tuple[float, str]:
    """How far apart §V-A's "similar rate" lets two training losses be: the largest ratio, in Table I's
    printed training losses of either column, between SubTrunc's or UnionFL's and a baseline's (all of which
    the paper calls similar), and the pair it comes from in words."""
    paper = load_paper_results("submodular_selection")
    loss = paper[(paper["table"] == "Table I") & (paper["metric"] == "train_loss")]
    value = {(d, m): float(v) for d, m, v in zip(loss["dataset"], loss["method"], loss["value"], strict=True)}
    ratios = {
        (column, ours, base): max(value[column, ours], value[column, base])
        / min(value[column, ours], value[column, base])
        for column in dict.fromkeys(loss["dataset"])
        for ours in ("SubTrunc", "UnionFL")
        for base in BASELINES
    }
    (column, ours, base), factor = max(ratios.items(), key=lambda kv: kv[1])
    return factor, f"{ours} {value[column, ours]:g} against {base} {value[column, base]:g}, {column}"


def comparable_margin(table: str, column: str, row: str) -> tuple[float, str]:
    """The non-inferiority margin of "comparable testing accuracy" (§V-A, §V-B) against paper row ``row``:
    the seed std that ``table`` prints for that row's testing accuracy in ``column``, and where it comes
    from in words."""
    value, std = printed("submodular_selection", table, column, row, "global_acc")
    return std, f"{table}'s printed seed std of {row}'s testing accuracy, {column} ({value:.2f} ± {std:.2f})"


def _lower(who: str, than: str) -> str:
    """The text of §V-A's dissimilarity claims."""
    return f"{who} has a lower client dissimilarity than {than}"


def _comparable(who: str, than: str) -> str:
    """The text of §V-A's accuracy claims."""
    return f"{who}'s accuracy is comparable to {than}'s"


def _ran(runs: pd.DataFrame) -> set[str]:
    """The method labels that ran (none where the experiment did not run)."""
    return set(runs["method"]) if "method" in runs else set()


def _relabel(label: str, reading: str) -> str:
    """SubTrunc's method label under another reading of G's scale (``experiments._subtrunc``'s labels)."""
    return label.replace(f", {experiments.READING} G", f", {reading} G")


def is_divfl(runs: pd.DataFrame, label: str) -> bool:
    """Whether ``label``'s runs are DivFL's: every round of each run recorded ``steered_steps`` and it was 0,
    i.e. each greedy step picked G's best of the same pool, so SubTrunc picked DivFL's clients on the same
    gradients and draws in every round (``algorithms/subtrunc.py``; λ = 0 is DivFL) and each run is DivFL's
    run of its seed. False where ``runs`` has no run directories."""
    if "path" not in runs:
        return False
    paths = runs.loc[runs["method"] == label, "path"]
    for path in paths:
        steered = [r.get("diagnostics", {}).get("steered_steps") for r in RunStore(path).records("rounds")]
        if not steered or any(s is None or s for s in steered):
            return False
    return len(paths) > 0


def _placed(experiment: Experiment, runs: pd.DataFrame, claims: list[Claim]) -> list[Claim]:
    """The paper's ``claims`` as this page checks them: where the experiment did not run (``runs`` has no
    ``dataset``; ``Paper.check`` then reads the paper's verdict in the claim's dataset), in the paper's own
    column."""
    if "dataset" in runs:
        return claims
    return [replace(c, dataset=experiments.column_of(experiment.name)) for c in claims]


def _variant(claim: Claim, reading: str) -> Claim:
    """``claim`` on SubTrunc's runs under another ``reading`` of G's scale: the package's observation, whose
    verdict is the default reading's row."""
    return replace(
        claim,
        primary=False,
        source=(
            f"{OBSERVATION}: variant: {reading} G, another reading of G's scale (docs/readings.md); the "
            f"verdict is the {experiments.READING} reading's row. The paper's claim: {claim.source}"
        ),
    )


def _reading_variants(claims: list[Claim], label: str, ran: set[str]) -> list[Claim]:
    """Each claim of SubTrunc's run ``label`` (the default reading) again on SubTrunc's run under each other
    reading of G's scale that ran (:func:`_variant`)."""
    return [
        _variant(replace(c, text=f"{c.text} (variant: {reading} G)", method=other), reading)
        for reading in OTHER_READINGS
        if (other := _relabel(label, reading)) in ran
        for c in claims
        if c.method == label
    ]


def table1_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """§V-A on Table I: SubTrunc (the default reading of G's scale) and UnionFL against each baseline (DivFL,
    Random, Power-of-Choice) on client dissimilarity (lower; the primary claims: the abstract states them),
    the training-loss curve (a similar rate, read as the mean per-round training loss within the factor of
    :func:`similar_loss_factor`, on ``ln_loss_auc``) and accuracy (comparable: not lower by more than the
    baseline's printed seed std, :func:`comparable_margin`), and SubTrunc against UnionFL (the lowest
    dissimilarity of all); then SubTrunc's claims on the other readings' runs, as observations."""
    row = paper_rows(experiment)
    column = experiments.column_of(experiment.name)
    subtrunc, unionfl = row["SubTrunc"], row["UnionFL"]
    ours = (("SubTrunc", subtrunc), ("UnionFL", unionfl))
    baselines = {name: row[name] for name in BASELINES}
    factor, pair = similar_loss_factor()
    rate = (
        f"{S_RATE} (read: the mean per-round training loss within a factor {factor:.3g} either way, "
        f"|ln ratio| ≤ {math.log(factor):.3f})"
    )
    similar = (
        f"the largest training-loss ratio Table I prints between SubTrunc or UnionFL and a baseline, all of "
        f"which §V-A calls similar ({pair}: a factor {factor:.3g}, ln {math.log(factor):.3f})"
    )
    margins = {name: comparable_margin("Table I", column, name) for name in BASELINES}
    claims = [
        *(
            Claim(_lower(who, name), "std", label, "<", other, source=S_BASELINES, primary=True)
            for who, label in ours
            for name, other in baselines.items()
        ),
        Claim(_lower("SubTrunc", "UnionFL"), "std", subtrunc, "<", unionfl, source=S_LOWEST),
        *(
            Claim(f"{who}'s training loss falls at a similar rate to {name}'s", "ln_loss_auc", label, "≈",
                  other, tolerance=math.log(factor), tolerance_source=similar, source=rate)
            for who, label in ours
            for name, other in baselines.items()
        ),
        *(
            Claim(_comparable(who, name), "global_acc", label, ">=", other,
                  tolerance=margins[name][0], tolerance_source=margins[name][1], source=S_ACCURACY)
            for who, label in ours
            for name, other in baselines.items()
        ),
    ]  # fmt: skip
    return _placed(experiment, runs, claims) + _reading_variants(claims, subtrunc, _ran(runs))


def _extremes(methods: list[Method], param: str) -> tuple[Method, Method]:
    """The methods with the smallest and the largest value of ``param`` among ``methods``."""
    ordered = sorted(methods, key=lambda m: m.params[param])
    return ordered[0], ordered[-1]


def _table1_again(claim: Claim, table1: str, smallest: str) -> Claim:
    """Table II's ``claim`` where its runs are Table I's (SubTrunc against DivFL): the package's observation
    naming the Table I row (``table1``) that decides both sentences."""
    return replace(
        claim,
        source=(
            f'{OBSERVATION}: the same evidence as Table I\'s row "{table1}", which decides this sentence '
            f"too: the {smallest} runs picked DivFL's clients in every round of every seed "
            f"(H steered no greedy step), so they are DivFL's runs, and the largest λ's are Table I's "
            f"SubTrunc runs. The paper's claim: {claim.source}"
        ),
    )


def lambda_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """§V-B (Table II) on the default reading of G's scale, between the smallest and the largest λ run (all of
    Table II's where the experiment did not run): a larger λ lowers the client dissimilarity and keeps a
    comparable accuracy (not lower by more than the smallest λ's printed seed std, :func:`comparable_margin`);
    observations where the smallest λ's runs are DivFL's (:func:`is_divfl`) and the largest λ's are Table I's
    SubTrunc runs (then Table I's rows decide the same comparison); the same on each other reading whose λ
    runs ran, as observations (the trends per reading are also in :func:`lambda_sweep`)."""
    ran = _ran(runs)
    column = experiments.column_of(experiment.name)
    table1 = paper_rows(get_experiment(experiment.name.replace("_table2_", "_table1_")))["SubTrunc"]
    claims: list[Claim] = []
    for reading in (experiments.READING, *OTHER_READINGS):
        methods = [
            m
            for m in experiment.method_list()
            if experiments.reading_of(m) == reading
            and (m.label in ran if ran else reading == experiments.READING)
        ]
        if len(methods) < 2:
            continue
        smallest, largest = _extremes(methods, "lam")
        margin, why = comparable_margin("Table II", column, f"{smallest.params['lam']:.2f}")
        pair = [
            Claim(f"a larger λ lowers the client dissimilarity ({reading} G)", "std", largest.label, "<",
                  smallest.label, source=S_LAMBDA),
            Claim(f"a larger λ keeps a comparable accuracy ({reading} G)", "global_acc", largest.label, ">=",
                  smallest.label, tolerance=margin, tolerance_source=why, source=S_LAMBDA_ACCURACY),
        ]  # fmt: skip
        if reading != experiments.READING:
            claims += [_variant(c, reading) for c in pair]
        elif largest.label == table1 and is_divfl(runs, smallest.label):
            rows = (_lower("SubTrunc", "DivFL"), _comparable("SubTrunc", "DivFL"))
            claims += [_table1_again(c, r, smallest.label) for c, r in zip(pair, rows, strict=True)]
        else:
            claims += _placed(experiment, runs, pair)
    return claims


def window_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """§V-B (Table III): a longer UnionFL window (the longest against the shortest run) raises the accuracy
    and lowers the dissimilarity."""
    ran = _ran(runs)
    methods = [m for m in experiment.method_list() if not ran or m.label in ran]
    shortest, longest = _extremes(methods or list(experiment.method_list()), "window")
    return _placed(
        experiment,
        runs,
        [
            Claim("a longer window raises the accuracy", "global_acc", longest.label, ">", shortest.label,
                  source=S_WINDOW),
            Claim("a longer window lowers the dissimilarity", "std", longest.label, "<", shortest.label,
                  source=S_WINDOW),
        ],
    )  # fmt: skip


def phi_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """§V-C (Table IV): φ = identity gives a lower dissimilarity than ln(1 + x)."""
    row = paper_rows(experiment)
    return _placed(
        experiment,
        runs,
        [
            Claim("φ = identity lowers the dissimilarity against ln(1+x)", "std", row["Identity"], "<",
                  row["ln(1+x)"], source=S_PHI)
        ],
    )  # fmt: skip


def claims_table(
    name: str,
    runs: pd.DataFrame | None,
    agg: pd.DataFrame | None = None,
    paper: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Every claim of experiment ``name`` (:meth:`Paper.check <fairfl_core.report.bundle.Paper.check>`: where
    it did not run, ``not run at this profile`` with the paper's own verdict; on a stand-in on another
    column's data, "not checked (no offline data)" with the direction in ``stand_in_result``), with
    :func:`mark_identical_selections`. ``agg`` must hold :data:`CLAIM_METRICS`."""
    return _marked(BUNDLE.check(name, runs, agg, paper), runs)


def _marked(claims: pd.DataFrame, runs: pd.DataFrame | None) -> pd.DataFrame:
    if runs is None:
        return claims.assign(identical_selections=False)
    return mark_identical_selections(claims, runs)


def marked_claims(page: PaperRun, claims: pd.DataFrame) -> pd.DataFrame:
    """The page's claims, each experiment's with :func:`mark_identical_selections` on its runs."""
    parts = [_marked(rows, page.runs.get(n)) for n, rows in claims.groupby("experiment", sort=False)]
    return pd.concat(parts, ignore_index=True)


TABLE_METRICS = ("train_loss", "global_acc", "std")


def page_tables(page: PaperRun) -> dict[str, PageTable]:
    """Each table run beside the printed numbers, titled with the calibrated η and K its runs ran with
    (from the calibration, not the profile); Table I's selections against DivFL's and SubTrunc's per-round
    diagnostics; Table II's λ sweep per reading of G's scale."""
    tables = {}
    for name, runs in page.runs.items():
        experiment, column, shown = get_experiment(name), experiments.column_of(name), (name,)
        lr, rounds = runs["config.train.lr"].iloc[0], int(runs["config.train.rounds"].iloc[0])
        calibrated = f"{column} column, calibrated η = {lr:g}"
        title = f"{experiment.description}; calibrated η = {lr:g}, K = {rounds} rounds"
        table = results_table(runs, metrics=TABLE_METRICS, paper=page.paper[name])
        tables[name] = PageTable(table, title, shown)
        if name.startswith("submodular_table1"):
            agreement = selection_agreement(runs, paper_rows(experiment)["DivFL"]).round(1)
            title = f"Selections against DivFL's, {calibrated}"
            tables[f"{name}_agreement_with_divfl"] = PageTable(agreement, title, shown)
            title = f"SubTrunc's per-round selection diagnostics, {calibrated}"
            tables[f"{name}_selection_diagnostics"] = PageTable(selection_diagnostics(runs), title, shown)
        if name.startswith("submodular_table2_"):
            title = f"λ sweep per reading of G's scale, {calibrated}"
            tables[f"{name}_by_reading"] = PageTable(lambda_sweep(experiment, runs), title, shown)
    return tables


@dataclass(frozen=True)
class Calibration:
    """The calibrated K (``rounds``) and η (``lr``), Random's mean accuracy there, the paper's Random
    (``target``), whether they are within the tolerance, and every candidate's accuracy (``table``)."""

    rounds: int
    lr: float
    accuracy: float
    target: float
    within: bool
    table: pd.DataFrame


def paper_random_accuracy(column: str) -> float:
    """The paper's Random test accuracy in Table I's ``column`` (the calibration's target)."""
    paper = load_paper_results("submodular_selection")
    hit = paper[
        (paper["table"] == "Table I")
        & (paper["dataset"] == column)
        & (paper["method"] == "Random")
        & (paper["metric"] == "global_acc")
    ]
    return float(hit["value"].iloc[0])


def calibrate(
    curves: pd.DataFrame, target: float, default_lr: float, rounds: tuple[int, ...], tol: float = 3.0
) -> Calibration:
    """The package's calibration rule (readings.md; the paper gives no K or η) on Random's accuracy
    curves (``curves``: columns ``lr``, ``round``, ``global_acc``, one row per run and evaluation; seeds are
    averaged): K first, at ``default_lr``, the smallest of ``rounds`` whose accuracy is within ``tol`` points
    of ``target`` (none: the closest); then η at that K, ``default_lr`` if it is within ``tol`` already, else
    the closest η."""
    mean = curves[curves["round"].isin(rounds)].groupby(["lr", "round"], as_index=False)["global_acc"].mean()
    mean["gap"] = (mean["global_acc"] - target).abs()
    missing = sorted(set(rounds) - set(mean.loc[mean["lr"] == default_lr, "round"]))
    if missing:
        raise ValueError(
            f"Random at η = {default_lr:g} has no evaluation at rounds {missing}: run it that long"
        )
    at_default = mean[mean["lr"] == default_lr].sort_values("round")
    close = at_default[at_default["gap"] <= tol]
    k = int((close if len(close) else at_default.nsmallest(1, "gap")).iloc[0]["round"])
    at_k = mean[mean["round"] == k]
    default = at_k[at_k["lr"] == default_lr].iloc[0]
    best = default if default["gap"] <= tol else at_k.nsmallest(1, "gap").iloc[0]
    return Calibration(
        k, float(best["lr"]), float(best["global_acc"]), target, bool(best["gap"] <= tol), mean
    )


BUNDLE = register_paper(
    Paper(
        "submodular_selection",
        title=TITLE,
        experiments=tuple(
            f"submodular_table{i}_{key}" for key in experiments.COLUMNS.values() for i in range(1, 5)
        ),
        left_out={
            "quick": {
                f"submodular_table{i}_{key}": "not run at quick (2 CPU cores): run at paper"
                for key in experiments.COLUMNS.values()
                for i in range(1, 5)
                if f"submodular_table{i}_{key}" not in experiments.QUICK
            },
            "smoke": {
                f"submodular_table{i}_cifar10": (
                    "not run at smoke (the MNIST column checks the same code): run at paper"
                )
                for i in range(1, 5)
            },
        },
        claim_builders={
            "submodular_table1_": table1_claims,
            "submodular_table2_": lambda_claims,
            "submodular_table3_": window_claims,
            "submodular_table4_": phi_claims,
        },
        derive=lambda name, runs, profile: with_train_loss(runs),
        tables=page_tables,
        annotate_claims=marked_claims,
        claims_title="SubTrunc/UnionFL claims",
    )
)
