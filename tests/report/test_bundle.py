"""Each paper is one registered bundle: its plan per profile, claims of one signature, printed numbers and
readings."""

import inspect
import typing

import numpy as np
import pandas as pd
import pytest

from fairfl_core.data.stand_ins import present
from fairfl_core.experiments.profiles import EXPERIMENTS, PROFILES, Experiment, get_experiment
from fairfl_core.papers import PAPERS, check_bundle
from fairfl_core.papers.afga import experiments as A
from fairfl_core.papers.submodular_selection import experiments as S
from fairfl_core.report import PAPER, Claim, Paper, get_paper
from fairfl_core.report.bundle import NOT_RUN, PageTable

NAMES = tuple(sorted(PAPERS))  # every folder of fairfl_core/papers/ registers its bundles on import
BUILDERS = [(name, key) for name in NAMES for key in PAPERS[name].claim_builders]


@pytest.mark.parametrize("name", NAMES)
def test_every_registered_paper_keeps_the_bundle_contract(name, monkeypatch, tmp_path):
    monkeypatch.setenv("FAIRFL_DATA", str(tmp_path))  # no optional data set here
    check_bundle(get_paper(name))


def test_the_bundle_contract_names_what_to_fix(tmp_path):
    def untyped(experiment, runs):
        return []

    paper = Paper("sixth", ("quickstart",), claim_builders={"quick": untyped, "nothing_": untyped})
    with pytest.raises(ValueError, match="not annotated `-> list\\[Claim\\]`") as e:
        check_bundle(paper)
    assert "'nothing_' names no registered experiment" in str(e.value)
    assert "sixth/readings.md" in str(e.value)
    with pytest.raises(ValueError, match="'missing' is not registered"):
        check_bundle(Paper("sixth", ("missing",)))


@pytest.mark.parametrize("name", NAMES)
def test_the_plan_covers_every_experiment_and_says_why(name, monkeypatch, tmp_path):
    monkeypatch.setenv("FAIRFL_DATA", str(tmp_path))  # no optional data set here
    paper = get_paper(name)
    for profile in PROFILES:
        run, skipped = paper.planned(profile)
        assert set(run) | set(skipped) == set(paper.experiments) and not set(run) & set(skipped)
        assert all(why.startswith("not run") for why in skipped.values()), skipped
    with pytest.raises(ValueError, match="profile 'huge'"):
        paper.planned("huge")


def test_the_plans_of_afga_and_submodular_selection():
    afga, sub = get_paper("afga"), get_paper("submodular_selection")
    assert set(afga.planned("quick")[0]) == set(A.QUICK)
    assert "afga_table6_resnet18" in afga.planned("smoke")[1]
    if not present("cifar100"):
        assert afga.planned("paper")[1].keys() == {"afga_table2_s1", "afga_table2_s2"}
    assert sub.planned("quick")[0] == list(S.QUICK) and sub.planned("paper")[1] == {}
    assert sub.planned("smoke")[0] == [f"submodular_table{i}_mnist" for i in range(1, 5)]


def _runs(experiment: Experiment) -> pd.DataFrame:
    """One run per method of ``experiment`` with the per-group accuracies that GIFAIR-FL's claims read."""
    labels = [m.label for m in experiment.method_list()]
    groups = np.random.default_rng(0).uniform(0, 100, (3, len(labels)))
    return pd.DataFrame(
        {"method": labels, "dataset": "d", "data": "d", "stand_in": None, "status": "complete", "seed": 0}
        | {f"group_acc_{g}": accuracies for g, accuracies in enumerate(groups)}
    )


@pytest.mark.parametrize(("name", "key"), BUILDERS, ids=[f"{n}:{k}" for n, k in BUILDERS])
def test_every_claim_builder_has_the_one_signature_and_names_methods_of_its_experiment(name, key):
    """The contract of a registered claim builder: ``claims(experiment, runs) -> list[Claim]`` on every
    experiment it is registered for, naming only that experiment's methods."""
    builder = PAPERS[name].claim_builders[key]
    assert list(inspect.signature(builder).parameters) == ["experiment", "runs"]
    assert typing.get_type_hints(builder)["return"] == list[Claim]
    experiments = [get_experiment(n) for n in sorted(EXPERIMENTS) if n.startswith(key)]
    assert experiments, f"paper {name!r}: claim builder {key!r} names no registered experiment"
    for experiment in experiments:
        # FedEBA+ Table 1's claims name the Fashion-MNIST column's methods on both columns (CIFAR-10 runs a
        # subset: the others' claims come out "missing")
        labelled = get_experiment("fedeba_table1_fmnist") if key == "fedeba_table1_" else experiment
        claims = builder(experiment, _runs(experiment))
        assert isinstance(claims, list) and claims, experiment.name
        assert all(isinstance(c, Claim) for c in claims), experiment.name
        named = {c.method for c in claims} | {
            c.than for c in claims if isinstance(c.than, str) and c.than != PAPER
        }
        assert named <= {m.label for m in labelled.method_list()}, (experiment.name, named)


def test_printed_values_and_readings_come_from_the_shipped_files():
    afga = get_paper("afga")
    assert afga.value("Table 7", "CIFAR-10", "CAFGA", "hours_to_78") == 172.42
    with pytest.raises(KeyError, match="prints no"):
        afga.value("Table 7", "CIFAR-10", "CAFGA", "hours_to_99")
    appendix = get_paper("fedeba_plus_appendix")  # its numbers are FedEBA+'s
    assert appendix.values().equals(get_paper("fedeba_plus").values())
    assert appendix.value("Table 9", "CIFAR-10", "FedAvg", "std") == get_paper("fedeba_plus").value(
        "Table 9", "CIFAR-10", "FedAvg", "std"
    )
    assert afga.readings().startswith("# Readings: AFGA and CAFGA")
    assert "SubTrunc and UnionFL" not in afga.readings()
    assert appendix.readings() == get_paper("fedeba_plus").readings()  # the paper's folder


def test_an_unknown_paper_is_named_with_the_registered_ones():
    with pytest.raises(KeyError, match="no paper 'sixth'"):
        get_paper("sixth")
    assert {"afga", "fedeba_plus", "fedeba_plus_appendix", "gifair_fl", "submodular_selection"} <= set(PAPERS)


def test_an_experiment_built_on_another_columns_config_names_its_own_paper_column():
    from fairfl_core.experiments.profiles import get_experiment
    from fairfl_core.report.bundle import paper_dataset

    assert paper_dataset(get_experiment("submodular_table1_cifar10")) == "CIFAR-10"
    assert paper_dataset(get_experiment("submodular_table1_mnist")) == "MNIST"


def test_a_table_built_on_another_config_and_claims_not_run_carry_the_papers_column_and_effect():
    from fairfl_core.experiments.profiles import get_experiment
    from fairfl_core.papers.afga.claims import BUNDLE as AFGA
    from fairfl_core.report.bundle import paper_dataset

    assert paper_dataset(get_experiment("afga_table2_s1")) == "CIFAR-100"
    table = AFGA.check("afga_table2_s1", None)
    # CIFAR-100's files are not here and it has no stand-in: its claims stay in the count, not checked
    assert AFGA.unavailable("afga_table2_s1")
    assert (table["result"] == "not checked (no offline data)").all() and (
        table["dataset"] == "CIFAR-100"
    ).all()
    decided = table[table["holds_in_paper"].isin(["holds", "fails"])]
    assert len(decided) and decided["paper_effect"].notna().all()  # the printed numbers' difference


def test_an_experiment_without_claims_checks_to_an_empty_table(monkeypatch):
    from fairfl_core.papers.equitable_fl.claims import BUNDLE as EQUITABLE

    name = next(iter(EQUITABLE.experiments))
    for key in [k for k in EQUITABLE.claim_builders if name.startswith(k)]:
        monkeypatch.setitem(EQUITABLE.claim_builders, key, lambda experiment, runs: [])
    assert EQUITABLE.check(name, None).empty  # not run and nothing to claim: no rows, no error


def _derived(name, runs, profile):
    return runs.assign(doubled=2 * runs["global_acc"])


def _one_table(page):
    table = page.runs["quickstart"][["method", "seed", "doubled"]]
    return {"doubled": PageTable(table, "Twice the accuracy", ("quickstart",))}


def test_paper_run_derives_saves_its_tables_and_decides_its_claims(tmp_path):
    """``Paper.run`` at smoke, one seed: the bundle's ``derive`` feeds its ``tables`` (saved with their
    captions) and its claims (saved under ``claims_name``, one row per claim, aggregated over the runs)."""
    quickstart = get_paper("quickstart")
    paper = Paper(
        "sixth",
        ("quickstart",),
        claim_builders=quickstart.claim_builders,
        printed_in="fedeba_plus",
        derive=_derived,
        tables=_one_table,
        claims_name="sixth_claims",
    )
    page = paper.run("smoke", tmp_path / "results", tmp_path / "out", seeds=[0], methods=["FedAvg"])
    runs = page.runs["quickstart"]
    assert runs["method"].tolist() == ["FedAvg"]  # methods: only that row ran
    assert runs["doubled"].tolist() == (2 * runs["global_acc"]).tolist()
    saved = pd.read_csv(tmp_path / "out" / "doubled.csv")
    assert saved["doubled"].tolist() == pytest.approx(runs["doubled"].tolist(), abs=1e-9)
    assert (tmp_path / "out" / "doubled.md").read_text().startswith("Twice the accuracy")
    claims = pd.read_csv(tmp_path / "out" / "sixth_claims.csv")
    named = quickstart.claims(get_experiment("quickstart"), runs)
    assert sorted(claims["claim"]) == sorted(c.text for c in named)
    fedprox = claims["claim"].str.contains("FedProx")  # a claim naming a row that did not run says so
    assert fedprox.any() and (claims.loc[fedprox, "result"] == NOT_RUN).all()
    assert claims["value"].iloc[0] == pytest.approx(runs["global_acc"].iloc[0], abs=0.005)  # 2 decimals
    assert "left out of this notebook run (methods=['FedAvg'])" in page.left_out_reason()
    with pytest.raises(ValueError, match=r"methods: no row \['FedSGD'\]"):
        paper.run("smoke", tmp_path / "results", tmp_path / "out", seeds=[0], methods=["FedSGD"])


def test_paper_run_leaves_out_what_the_notebook_run_does_not_run(tmp_path):
    """An experiment in ``left_out`` is neither run nor checked (its claims belong to the pages that run
    it); the profile's own skips keep their not-run rows."""
    page = get_paper("quickstart").run(
        "smoke", tmp_path / "results", tmp_path / "out", left_out={"quickstart": "not run (a parameter)"}
    )
    assert page.runs == {} and page.outcomes == [] and page.claims.empty
    assert page.skipped == {"quickstart": "not run (a parameter)"}
    assert not (tmp_path / "out" / "claims.csv").exists()


def test_paper_run_names_an_experiment_it_cannot_leave_out(tmp_path):
    with pytest.raises(ValueError, match=r"left_out: no experiment \['nope'\] in paper 'quickstart'"):
        get_paper("quickstart").run("smoke", tmp_path, tmp_path, left_out={"nope": "not run (a parameter)"})
    assert not list(tmp_path.iterdir())  # nothing ran
