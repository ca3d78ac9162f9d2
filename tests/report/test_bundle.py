"""Each paper is one registered bundle: its plan per profile, claims of one signature, printed numbers and
readings."""

import pandas as pd
import pytest

from fairfl_core.data.stand_ins import present
from fairfl_core.experiments.papers import afga as A
from fairfl_core.experiments.papers import submodular_selection as S
from fairfl_core.experiments.profiles import EXPERIMENTS, PROFILES, get_experiment
from fairfl_core.report import PAPER, Claim, get_paper
from fairfl_core.report.bundle import PAPERS

NAMES = ("afga", "equitable_fl", "fedeba_plus", "gifair_fl", "submodular_selection")


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


@pytest.mark.parametrize("name", ["afga", "equitable_fl", "fedeba_plus", "submodular_selection"])
def test_claims_have_one_signature_and_name_methods_of_the_experiment(name):
    paper = get_paper(name)
    claimed = [get_experiment(n) for n in sorted(EXPERIMENTS) if paper.claimed([n])]
    assert claimed
    for experiment in claimed:
        # Table 1's claims name the Fashion-MNIST column's methods on both columns (CIFAR-10 runs a subset:
        # the others' claims come out "missing")
        labelled = (
            get_experiment("fedeba_table1_fmnist")
            if experiment.name.startswith("fedeba_table1_")
            else experiment
        )
        labels = {m.label for m in labelled.method_list()}
        runs = pd.DataFrame({"method": [m.label for m in experiment.method_list()]})
        claims = paper.claims(experiment, runs)
        assert claims and all(isinstance(c, Claim) for c in claims), experiment.name
        named = {c.method for c in claims} | {
            c.than for c in claims if isinstance(c.than, str) and c.than != PAPER
        }
        assert named <= labels, (experiment.name, named - labels)


def test_printed_values_and_readings_come_from_the_shipped_files():
    afga = get_paper("afga")
    assert afga.value("Table 7", "CIFAR-10", "CAFGA", "hours_to_78") == 172.42
    with pytest.raises(KeyError, match="prints no"):
        afga.value("Table 7", "CIFAR-10", "CAFGA", "hours_to_99")
    assert afga.readings().startswith("## AFGA and CAFGA")
    assert "## SubTrunc" not in afga.readings()
    for name in NAMES:  # every bundle names its section of docs/readings.md
        assert get_paper(name).readings().startswith(f"## {get_paper(name).readings_heading}")


def test_an_unknown_paper_is_named_with_the_registered_ones():
    with pytest.raises(KeyError, match="no paper 'sixth'"):
        get_paper("sixth")
    assert set(NAMES) <= set(PAPERS)
