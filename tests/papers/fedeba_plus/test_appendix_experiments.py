"""FedEBA+ appendix experiments (Tables 9, 10, 11, 13) and the Table 17-19 helpers: every paper row is run
or has a reason, the plug-ins / noise / stand-in reach the run configs, the reporting helpers on hand
numbers, and the claims hold in the paper's own numbers."""

import json
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from fairfl_core import metrics, report  # report first: it loads the experiment catalogue
from fairfl_core.experiments import archive
from fairfl_core.experiments.profiles import experiment_configs, get_experiment, get_profile
from fairfl_core.experiments.runner import run_data, run_experiment
from fairfl_core.models import build_model
from fairfl_core.papers.fedeba_plus import appendix as ra
from fairfl_core.papers.fedeba_plus import appendix_experiments as fa
from fairfl_core.papers.fedeba_plus import experiments as fe
from fairfl_core.papers.fedeba_plus.experiments import FEDAVG_MATCHED
from fairfl_core.report.results import LEDGER
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.engine import Engine
from tests.rounding import assert_close

APPENDIX = {
    "fedeba_table9_mlp": {},
    "fedeba_table10_momentum": {},
    "fedeba_table11_fedvarp": {},
    "fedeba_table13_noise_fmnist": fa.TABLE13_NOT_IMPLEMENTED,
    "fedeba_table13_noise_cifar10": fa.TABLE13_NOT_IMPLEMENTED,
}


@pytest.mark.parametrize("name", sorted(APPENDIX))
def test_every_paper_row_is_run_or_has_a_reason(name):
    exp = get_experiment(name)
    paper = report.load_paper_results("fedeba_plus")
    printed = set(paper.loc[paper["table"] == exp.paper.table, "method"])
    controls = [  # no paper row: ours
        m
        for m in exp.method_list()
        if m.label == FEDAVG_MATCHED.label or m.label.endswith(fa.HEAVY_BALL_LABEL)
    ]
    rows = [m.paper_row for m in exp.method_list() if m not in controls]
    assert len(rows) == len(set(rows)) and None not in rows and all(m.paper_row is None for m in controls)
    assert set(rows) | set(APPENDIX[name]) == printed
    assert not set(rows) & set(APPENDIX[name])


def test_tables_17_to_19_rows_are_table1_rows_or_have_a_reason():
    paper = report.load_paper_results("fedeba_plus")
    table1 = {m.paper_row for m in get_experiment("fedeba_table1_fmnist").method_list()}
    for table in ("Table 17", "Table 18", "Table 19"):
        printed = set(paper.loc[paper["table"] == table, "method"])
        assert printed - table1 <= set(fa.TABLES17_19_NOT_RUN), table


def _params(name, profile="paper"):
    return [
        (c.name, c.algorithm.name, c.algorithm.params) for c in experiment_configs(name, profile, seeds=[0])
    ]


def test_table10_runs_every_row_with_its_reading_and_with_heavy_ball():
    runs = _params("fedeba_table10_momentum")
    heavy = [
        (label.removesuffix(fa.HEAVY_BALL_LABEL), a, p)
        for label, a, p in runs
        if fa.HEAVY_BALL_LABEL in label
    ]
    read = [(label, a, p) for label, a, p in runs if fa.HEAVY_BALL_LABEL not in label]
    assert fa.MOMENTUM == {"server_momentum": 0.9, "server_momentum_lr": 0.1}
    assert all(p["server_momentum_lr"] == 0.1 for _, _, p in read)
    assert all(p["server_momentum"] == 0.9 and "server_momentum_lr" not in p for _, _, p in heavy)
    # the same rows, methods and hyper-parameters both ways, the matched-step FedAvg included
    strip = [
        (label, a, {k: v for k, v in p.items() if not k.startswith("server_momentum")})
        for label, a, p in read
    ]
    assert strip == [
        (label, a, {k: v for k, v in p.items() if k != "server_momentum"}) for label, a, p in heavy
    ]
    assert len(read) == 12 and FEDAVG_MATCHED.label in {label for label, _, _ in read}


def test_momentum_and_fedvarp_reach_every_method():
    ours = {"fair_grad_units": "update", "alpha": 0.9, "tau": 0.1}
    for name, plugins in (
        ("fedeba_table10_momentum", (fa.MOMENTUM, fa.HEAVY_BALL)),
        ("fedeba_table11_fedvarp", (fa.FEDVARP,)),
    ):
        runs = _params(name)
        assert all(plugins[-1].items() <= params.items() for _, _, params in runs), name
        fedeba = [params for label, algo, params in runs if algo == "fedeba+"]
        assert fedeba == [{**ours, **plugin} for plugin in plugins]
    assert {a for _, a, _ in _params("fedeba_table10_momentum")} >= {
        "fedprox",
        "propfair",
        "term",
        "fedmgda+",
    }


def test_label_noise_only_in_table13_and_quick_profiles_are_short():
    for name in APPENDIX:
        for profile in ("smoke", "quick", "paper"):
            configs = experiment_configs(name, profile)
            noise = {c.data.label_noise for c in configs}
            assert noise == ({0.5} if "table13" in name else {0.0}), (name, profile)
    quick = {name: experiment_configs(name, "quick") for name in APPENDIX}
    assert {c.train.rounds for name, cs in quick.items() if "cifar10" not in name for c in cs} == {300}
    assert {c.seed for cs in quick.values() for c in cs} == {0}
    assert all(c.algorithm.name != "afl" for cs in quick.values() for c in cs)  # all clients every round
    assert [c.name for c in quick["fedeba_table13_noise_cifar10"]] == ["FedAvg", "FedEBA+"]
    assert (
        len(quick["fedeba_table9_mlp"]) == 8 and len(experiment_configs("fedeba_table9_mlp", "paper")) == 105
    )


def test_table9_uses_the_mlp_on_the_stand_in_or_on_real_cifar10(monkeypatch, tmp_path):
    monkeypatch.setenv("FAIRFL_DATA", str(tmp_path))
    cfg = experiment_configs("fedeba_table9_mlp", "quick")[0]
    assert (cfg.model.name, cfg.model.options, cfg.data.stand_in) == ("mlp", {}, "CIFAR-10")
    assert get_profile("fedeba_table9_mlp", "quick").description.startswith("stand-in")
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for f in [*(f"data_batch_{i}" for i in range(1, 6)), "test_batch"]:
        (folder / f).write_bytes(b"")
    cfg = experiment_configs("fedeba_table9_mlp", "quick")[0]  # resolved when the configs are built
    assert (cfg.model.name, cfg.data.name, cfg.data.stand_in) == ("mlp_cifar10", "cifar10", None)


def test_subset_rejects_unknown_labels():
    with pytest.raises(ValueError, match=r"unknown method label\(s\) \['FedNope'\]"):
        fe.subset_methods(fa.TABLE13, ["FedAvg", "FedNope"])


# -- reporting helpers ------------------------------------------------------------------------------------
def _runs(data="fashion_mnist", stand_in=None, label="fashion_mnist", **columns) -> pd.DataFrame:
    n = len(next(iter(columns.values())))
    return pd.DataFrame(
        {"dataset": label, "data": data, "stand_in": stand_in, "status": "complete", "seed": 0, **columns},
        index=range(n),
    )


def test_missing_reasons_for_left_out_and_failed_methods():
    exp = get_experiment("fedeba_table13_noise_fmnist")
    failed = {"AFL (λ=0.7)": "ValueError: x"}
    reasons = report.missing_reasons(exp, ["FedAvg", "FedEBA+"], failed, {"FOCUS": "r"})
    assert reasons["FOCUS"] == "r" and reasons["AFL"] == "run failed: ValueError: x"
    assert reasons["q-FFL"].startswith("not run: left out") and reasons["FedFV"].startswith("not run:")
    assert set(reasons) == {"FOCUS", "AFL", "q-FFL", "FedFV"}


def test_with_missing_rows_keeps_every_not_implemented_row_with_its_paper_numbers():
    exp = get_experiment("fedeba_table1_fmnist")
    runs = _runs(method=["FedAvg", "FedEBA+"], global_acc=[80.0, 82.0], var=[60.0, 50.0], worst5=[1, 2.0])
    table = report.results_table(
        runs, metrics=("global_acc", "var"), paper=report.paper_values(exp, runs, ("Table 1",))
    )
    out = report.with_missing_rows(table, runs, exp, fe.NOT_IMPLEMENTED).set_index("method")
    assert list(out.index) == ["FedAvg", "FedEBA+", *fe.NOT_IMPLEMENTED]
    for method, reason in fe.NOT_IMPLEMENTED.items():
        assert out.loc[method, "Var. reproduced"] == "not implemented" and out.loc[method, "note"] == reason
    assert out.loc["FedAvg", "note"] == "" and out.loc["FedAvg", "Var. paper"] == "62.44 ± 4.55"


def test_with_missing_rows_other_table_labels_and_decimals():
    exp = get_experiment("fedeba_table13_noise_cifar10")
    runs = _runs("cifar10", "CIFAR-10", "fmnist (stand-in)", method=["FedAvg"], global_acc=[30.0], var=[40.0])
    table = report.results_table(
        runs, metrics=("global_acc", "var"), paper=report.paper_values(exp, runs, ("Table 13",))
    )
    out = report.with_missing_rows(
        table, runs, exp, {"AFL": "not run: busy", "FOCUS": "not implemented: x"}, None, 3
    )
    afl, focus = out.iloc[1], out.iloc[2]
    assert afl["method"] == "AFL (λ=0.7)" and afl["Var. reproduced"] == "not run"  # the label, not "AFL"
    assert afl["Var. paper"] == "35.580 ± 3.170" and afl["note"] == "not run: busy"  # CIFAR-10's "Std." col
    assert focus["method"] == "FOCUS" and focus["Global Acc. paper"] == "26.810 ± 1.220"
    assert out.iloc[0]["Global Acc. paper"] == "33.45 ± 0.89" and out.iloc[0]["note"] == ""


def test_cv_improvement_against_the_fedavg_mean():
    runs = _runs(method=["FedAvg", "FedAvg", "FedEBA+"], cv=[0.10, 0.12, 0.088])
    out = ra.with_cv_improvement(pd.concat([runs, _runs(label="other", method=["FedEBA+"], cv=[0.1])]))
    # reference (0.10 + 0.12) / 2 = 0.11: FedEBA+ 100 (0.11 − 0.088) / 0.11 = 20%; FedAvg runs ±9.09%
    # decimal literals, the mean (sum and division), 100 (ref − C_v) / ref and the hand fractions: 8
    # roundings; ref − C_v cancels, so the scale is 100 (ref + C_v) / ref at its largest
    improvement = out["cv_improvement"].iloc[:3].tolist()
    assert_close(improvement, [100 / 11, -100 / 11, 20.0], terms=8, scale=100 * (0.11 + 0.12) / 0.11)
    assert np.isnan(out["cv_improvement"].iloc[3])  # no FedAvg on that dataset


@pytest.fixture(scope="module")
def digits_run(tmp_path_factory):
    from tests.experiments.conftest import digits_config

    results = tmp_path_factory.mktemp("results")
    cfg = digits_config(rounds=2)
    run_experiment(cfg, results, progress=False)
    return cfg, report.load_runs(results, [cfg])


def test_faa_with_the_loss_shortcut(digits_run):
    _, runs = digits_run
    loss = json.loads(open(f"{runs['path'][0]}/evals.jsonl").read().splitlines()[-1])["client_loss"]
    assert ra.with_faa(runs, 0)["faa"].iloc[0] == max(loss) - min(loss)  # the same subtraction, same floats


def test_faa_against_each_clients_own_optimum(digits_run, tmp_path):
    cfg, runs = digits_run
    optimum = fa.client_optimum_losses(cfg, 30, tmp_path)
    untrained = fa.client_optimum_losses(cfg, 1, tmp_path)
    assert optimum.shape == (8,) and np.isfinite(optimum).all()
    assert optimum.mean() < untrained.mean()  # trained on its own data, each client's test loss drops
    loss = json.loads(open(f"{runs['path'][0]}/evals.jsonl").read().splitlines()[-1])["client_loss"]
    # the same local run (beside the run and in tmp_path) in this process and the same faa: exact
    assert ra.with_faa(runs, 30)["faa"].iloc[0] == metrics.faa(loss, optimum)
    with pytest.raises(ValueError, match="at least 1 step"):
        fa.client_optimum_losses(cfg, 0, tmp_path)


def test_the_local_optima_are_a_cached_run_of_every_client_training_alone(digits_run, tmp_path):
    """F_i(x_i*) comes from a ``local`` run through the runner: cached (a second call trains nothing) and
    equal to training each client's model by itself from the run's initial model (float64: the runner
    trains the clients in another order, so float32 would differ by rounding)."""
    cfg = digits_run[0]
    cfg = replace(cfg, engine=replace(cfg.engine, dtype="float64"))
    optimum_cfg = fa.client_optimum_config(cfg, 5)
    assert optimum_cfg.algorithm.name == "local" and optimum_cfg.train.rounds == 1
    assert optimum_cfg.train.clients_per_round == 8 and optimum_cfg.train.local_steps == 5
    first = fa.client_optimum_losses(cfg, 5, tmp_path)
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    stamp = (run_dir / "summary.json").stat().st_mtime_ns
    assert np.array_equal(fa.client_optimum_losses(cfg, 5, tmp_path), first)
    assert (run_dir / "summary.json").stat().st_mtime_ns == stamp
    # by hand: the engine trains every client from w_0 on its own data, then each is evaluated alone
    data = run_data(cfg)
    model = build_model(cfg.model.name, seed=cfg.seed, **cfg.model.options)
    engine = Engine(model, data, dtype=torch.float64)
    sim = Simulation(engine, optimum_cfg.train, cfg.seed)
    everyone = np.arange(data.num_clients)
    trained = engine.train(everyone, engine.init_params(), sim.local_spec(0), sim.seed_for(0, "batches"))
    expected = engine.losses(trained.params, everyone, "test")[0].cpu().numpy()
    # another order of the same float64 training: the rounding bound of tests/rounding.py, sums over at most
    # digits' 1,437 training samples, 7 reductions a local step (3 layers and the loss forward, 3 back) for 5
    # steps, and 5 for the test loss (3 layers, log-softmax, the mean)
    assert_close(first, expected, terms=1437, depth=7 * 5 + 5, what="optimum losses")


def test_a_pages_ledger_lists_the_local_optima_so_its_archive_holds_them(digits_run, tmp_path, monkeypatch):
    cfg = digits_run[0]
    ledger = tmp_path / "runs.jsonl"
    monkeypatch.setenv(LEDGER, str(ledger))
    fa.client_optimum_losses(cfg, 2, tmp_path / "results")
    assert [c.algorithm.name for c in archive.ledger_runs(ledger, tmp_path / "results")] == ["local"]


# -- which experiments a notebook run leaves out ------------------------------------------------------------
def test_every_column_and_table_runs_by_default():
    assert ra.left_out() == {}
    assert {n for names in ra.TABLE_EXPERIMENTS.values() for n in names} == set(ra.BUNDLE.experiments)


def test_columns_and_tables_leave_out_their_experiments_and_say_why():
    assert ra.left_out(["FashionMNIST"]) == dict.fromkeys(
        ("fedeba_table13_noise_cifar10", "fedeba_table1_cifar10"), "not run (columns=['FashionMNIST'])"
    )
    only = ra.left_out(["FashionMNIST"], [17, 18, 19])
    assert set(only) == set(ra.BUNDLE.experiments) - {"fedeba_table1_fmnist"}
    assert only["fedeba_table1_cifar10"] == "not run (columns=['FashionMNIST'])"  # the column's reason first
    assert only["fedeba_table10_momentum"] == "not run (tables=[17, 18, 19])"
    assert set(ra.left_out(None, [13])) == set(ra.BUNDLE.experiments) - set(ra.TABLE_EXPERIMENTS[13])


@pytest.mark.parametrize(
    ("columns", "tables", "message"),
    [
        (["MNIST"], None, r"columns=\['MNIST'\]: choose None \(both\) or a list of"),
        (None, [12], r"tables=\[12\]: choose None \(all\) or a list of \[9, 10, 11, 13, 17, 18, 19\]"),
        (
            None,
            [13, 17],
            r"tables=\[13, 17\]: Tables 17, 18 and 19 read the same Table 1 runs; name all three",
        ),
    ],
)
def test_a_bad_choice_of_columns_or_tables_is_one_line_naming_it(columns, tables, message):
    with pytest.raises(ValueError, match=message):
        ra.left_out(columns, tables)


# -- the claims ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ra.BUNDLE.experiments)
def test_claims_name_registered_methods_and_hold_in_the_papers_numbers(name):
    exp = get_experiment(name)
    claims = ra.BUNDLE.claims(exp, None)
    assert claims
    assert {c.method for c in claims} | {c.than for c in claims} <= {m.label for m in exp.method_list()}
    # each claim cites its table first: a paper claim's source starts with it, then the quoted sentence; an
    # observation names it after "the package's observation"
    assert all(re.match(r'Table \d+, [^"]+: "', c.source) for c in claims if c.kind == "paper")
    tables = sorted({re.search(r"Table \d+", c.source).group() for c in claims})
    data = "cifar10" if "cifar10" in name or "table9" in name else "fashion_mnist"
    runs = _runs(data, method=["FedAvg"], global_acc=[0.0])
    paper = report.paper_values(exp, runs, tuple(tables))
    as_results = paper.rename(columns={"paper_value": "mean", "paper_std": "std"}).assign(n=5)
    checked = report.check_claims(claims, as_results, paper)
    checked = checked[checked["than"] != FEDAVG_MATCHED.label]  # the control has no printed numbers
    # the printed means satisfy every claim; with the printed stds over 5 seeds a few are undetermined
    assert set(checked["holds_in_paper"]) == {"holds"}, checked.loc[checked["holds_in_paper"] != "holds"]
    assert "fails" not in set(checked["result"]), checked.loc[checked["result"] == "fails", "claim"]


def test_tables_17_to_19_claim_the_baselines_each_table_prints():
    """Table 17 prints FedAvg and q-FFL among Table 1's rows, Tables 18 and 19 also FedMGDA+, PropFair and
    TERM; Table 19 prints the Fashion-MNIST column only."""
    fmnist = ra.BUNDLE.claims(get_experiment("fedeba_table1_fmnist"), None)
    cifar10 = ra.BUNDLE.claims(get_experiment("fedeba_table1_cifar10"), None)
    rows = {m.label: m.paper_row for m in get_experiment("fedeba_table1_fmnist").method_list()}
    by_metric = {
        metric: {rows[c.than] for c in fmnist if c.metric == metric} for metric in ("faa", "cv", "kl")
    }
    assert by_metric["faa"] == {"FedAvg", "q-FFL"}
    assert by_metric["cv"] == by_metric["kl"] == {"FedAvg", "q-FFL", "FedMGDA+", "PropFair", "TERM"}
    assert {c.metric for c in cifar10} == {"faa", "cv"} and len(fmnist) == len(cifar10) + 10


def test_cnn_experiments_fit_the_quick_budget_and_keep_every_method_at_paper():
    table1 = get_experiment("fedeba_table1_cifar10")
    quick = {c.algorithm.name for c in experiment_configs("fedeba_table1_cifar10", "quick")}
    assert len(experiment_configs("fedeba_table1_cifar10", "quick")) == len(fe.TABLE1_CNN_QUICK)
    assert {"fedavg", "fedeba+", "prac_fedeba+"} <= quick and "ditto" not in quick
    assert table1.profiles["smoke"].methods is None and table1.profiles["paper"].methods is None
    runs = _runs(method=list(fe.TABLE1_CNN_QUICK), global_acc=[1.0] * len(fe.TABLE1_CNN_QUICK))
    reasons = report.missing_reasons(table1, runs["method"])
    assert set(reasons) == {"FedSGD", "Ditto", "AAggFF"}  # rows without a paper row are ours, not the paper's
    fig14 = {c.model.name for c in experiment_configs("fedeba_fig14_dirichlet", "quick")}
    assert (
        fig14 == {"mlp"}
        and experiment_configs("fedeba_fig14_dirichlet", "paper")[0].model.name == "cnn_cifar10"
    )
