"""Each paper is one registered bundle: its plan per profile, claims of one signature, printed numbers and
readings."""

import pandas as pd
import pytest

from fairfl_core.experiments.papers import afga as A
from fairfl_core.experiments.papers import submodular_selection as S
from fairfl_core.experiments.profiles import PROFILES, get_experiment
from fairfl_core.report import Claim, get_paper
from fairfl_core.report.bundle import PAPERS

NAMES = ("afga", "equitable_fl", "submodular_selection")


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
    if not A.cifar100_present():
        assert afga.planned("paper")[1].keys() == {"afga_table2_s1", "afga_table2_s2"}
    assert sub.planned("quick")[0] == list(S.QUICK) and sub.planned("paper")[1] == {}
    assert sub.planned("smoke")[0] == [f"submodular_table{i}_mnist" for i in range(1, 5)]


@pytest.mark.parametrize("name", NAMES)
def test_claims_have_one_signature_and_name_methods_of_the_experiment(name):
    paper = get_paper(name)
    for experiment in map(get_experiment, paper.experiments):
        labels = {m.label for m in experiment.method_list()}
        runs = pd.DataFrame({"method": sorted(labels)})
        claims = paper.claims(experiment, runs)
        assert all(isinstance(c, Claim) for c in claims)
        named = {c.method for c in claims} | {c.than for c in claims if isinstance(c.than, str)}
        assert named <= labels, (experiment.name, named - labels)


def test_printed_values_and_readings_come_from_the_shipped_files():
    afga = get_paper("afga")
    assert afga.value("Table 7", "CIFAR-10", "CAFGA", "hours_to_78") == 172.42
    with pytest.raises(KeyError, match="prints no"):
        afga.value("Table 7", "CIFAR-10", "CAFGA", "hours_to_99")
    assert afga.readings().startswith("## AFGA and CAFGA")
    assert "## SubTrunc" not in afga.readings()
    assert get_paper("submodular_selection").readings().startswith("## SubTrunc and UnionFL")


def test_an_unknown_paper_is_named_with_the_registered_ones():
    with pytest.raises(KeyError, match="no paper 'sixth'"):
        get_paper("sixth")
    assert set(NAMES) <= set(PAPERS)
