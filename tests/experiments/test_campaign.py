"""Campaigns (``experiments/campaign.py``): missing runs only, cheapest first or one page at a time, chunks
written once, rate."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from fairfl_core.experiments import campaign
from fairfl_core.experiments.archive import read_manifest
from fairfl_core.experiments.campaign import (
    PAGES,
    Campaign,
    archived_hashes,
    campaign_configs,
    campaign_pages,
    cost_units,
    experiments_of,
    page_order,
    plan,
    progress_markdown,
    progress_table,
    run_campaign,
    run_seconds,
)
from fairfl_core.experiments.config import config_hash
from fairfl_core.experiments.profiles import EXPERIMENTS
from fairfl_core.experiments.runner import run_data
from fairfl_core.experiments.sweep import run_sweep
from tests.experiments.conftest import digits_config


@pytest.fixture
def configs():
    """Three runs of different cost: 2, 4 and 2 rounds (two seeds of the 2-round run)."""
    return [digits_config(rounds=4), digits_config(rounds=2), replace(digits_config(rounds=2), seed=1)]


def chunks(root):
    return sorted((root / "paper" / "runs" / "chunks").glob("*.tar.xz"))


def test_cost_units_count_the_samples_trained_and_evaluated_by_hand():
    cfg = digits_config(rounds=6, clients_per_round=3, batch_size=16, local_steps=3)  # eval every 2
    data = run_data(cfg)
    tested = sum(len(t) for t in data.client_test) + len(data.pooled_test)
    assert cost_units(cfg) == 6 * 3 * 3 * 16 * 3 + 3 * tested
    afl = replace(cfg, algorithm=replace(cfg.algorithm, name="afl"))  # every one of the 8 clients trains
    assert cost_units(afl) - cost_units(cfg) == 6 * (8 - 3) * 3 * 16 * 3


def test_a_campaign_runs_what_is_missing_cheapest_first_and_packs_chunks_once(configs, tmp_path):
    results, root, lines = tmp_path / "results", tmp_path / "published", []
    run_sweep(configs[1:2], results, progress=False)  # finished before: packed at the start, not recomputed
    progress = run_campaign(configs, "paper", results, chunk=1, root=root, say=lines.append)
    assert (progress.todo, progress.done) == (2, 2)
    assert lines[0].startswith("packed 1 finished run(s) into") and "chunks/0001.tar.xz" in lines[0]
    ran = [line for line in lines if line.startswith("[")]
    assert "seed 1" in ran[0] and "[1/2 done, 1 left; 3 runs in all]" in ran[0]  # 2 rounds before 4
    assert "h left at the measured rate" in ran[0] and "0 left" in ran[1]
    assert [p.name for p in chunks(root)] == ["0001.tar.xz", "0002.tar.xz", "0003.tar.xz"]
    held = [{r.hash for r in read_manifest(p)[2]} for p in chunks(root)]
    assert [len(h) for h in held] == [1, 1, 1] and set.union(*held) == {config_hash(c) for c in configs}
    before = [p.read_bytes() for p in chunks(root)]
    again: list[str] = []
    progress = run_campaign(configs, "paper", results, chunk=1, root=root, say=again.append)
    assert progress.todo == 0 and len(again) == 1 and "0 to compute" in again[0]
    assert [p.read_bytes() for p in chunks(root)] == before  # a chunk is written once


def test_a_run_held_by_an_archive_is_never_recomputed_on_a_new_machine(configs, tmp_path):
    root = tmp_path / "published"
    run_campaign(configs[1:], "paper", tmp_path / "one", root=root, say=lambda _: None)
    assert archived_hashes("paper", root) == {config_hash(c) for c in configs[1:]}
    fresh = tmp_path / "two"  # the work tree did not survive; the committed chunks did
    assert plan(configs, "paper", fresh, root) == configs[:1]
    assert archived_hashes("quick", root) == set()  # chunks are per profile


def test_the_hours_left_are_the_measured_seconds_per_unit_times_the_units_left():
    progress = Campaign(total=5, todo=4, done=1, seconds=30.0, units=10.0, units_left=60.0)
    assert progress.hours_left(1) == pytest.approx(30 / 10 * 60 / 3600)
    assert progress.hours_left(2) == pytest.approx(30 / 10 * 60 / 3600 / 2)
    assert math.isnan(Campaign(total=1, todo=1).hours_left(1))


def test_the_rate_counts_each_runs_own_round_seconds_so_a_resumed_run_is_not_nearly_free(
    configs, tmp_path, monkeypatch
):
    timed = campaign._timed
    monkeypatch.setattr(campaign, "_timed", lambda *a: (timed(*a)[0], 0.0))  # resumed at its last round
    results = tmp_path / "results"
    progress = run_campaign(configs, "paper", results, root=tmp_path / "published", say=lambda _: None)
    rounds = [(results / config_hash(c) / "rounds.jsonl").read_text() for c in configs]
    assert progress.seconds == pytest.approx(sum(map(run_seconds, rounds)), rel=1e-12)  # summed in run order
    assert progress.seconds > 0
    assert progress.units == sum(map(cost_units, configs))


def test_pages_expand_to_registered_experiments_and_unknown_names_are_refused():
    assert all(e in EXPERIMENTS for names in PAGES.values() for e in names)
    assert experiments_of(["quickstart", "fedeba_table3_theta", "quickstart"]) == [
        "quickstart",
        "fedeba_table3_theta",
    ]
    with pytest.raises(ValueError, match=r"'nope' is neither a page .* nor a registered experiment"):
        experiments_of(["nope"])


def test_a_run_shared_by_two_pages_is_one_run_of_the_campaign():
    both = campaign_configs(["quickstart", "fedeba_plus"], "smoke")
    assert len({config_hash(c) for c in both}) == len(both)


def test_bad_campaign_settings_are_refused(configs, tmp_path):
    with pytest.raises(ValueError, match="workers=0, chunk=10: both must be at least 1"):
        campaign.run_campaign(configs, "paper", tmp_path, workers=0, root=tmp_path)


def test_page_order_finishes_the_page_with_the_least_compute_left_first(configs):
    """``configs``: 4, 2 and 2 rounds. Page "big" holds the 4-round run and the shared 2-round run of seed 0,
    page "small" the two 2-round runs: "small" costs less, so it runs first and takes the shared run, then
    "big" runs what is left; a run of no page comes last."""
    four, two, two_seed1 = configs
    extra = replace(digits_config(rounds=3), seed=2)
    pages = {"big": {"big": [four, two]}, "small": {"small": [two_seed1, two]}}
    order = page_order(pages, [four, two, two_seed1, extra])
    assert [config_hash(c) for c in order] == [config_hash(c) for c in (two_seed1, two, four, extra)]
    assert page_order(pages, [four]) == [four]  # a page with nothing left is skipped


def test_page_order_finishes_a_pages_experiment_with_the_least_compute_left_first(configs):
    """Experiment "one" (4 rounds) costs less than "three" (2 + 2 + 3 rounds), so its run comes first though
    each run of "three" is cheaper: cheapest first across the page would have run it last."""
    four, two, two_seed1 = configs
    three = replace(digits_config(rounds=3), seed=2)
    pages = {"page": {"three": [two, two_seed1, three], "one": [four]}}
    order = page_order(pages, [two, two_seed1, three, four])
    assert [config_hash(c) for c in order] == [config_hash(c) for c in (four, two, two_seed1, three)]
    assert sorted(map(cost_units, (two, three, four))) == [cost_units(c) for c in (two, three, four)]


def test_a_campaign_by_pages_packs_and_announces_each_page_as_its_last_run_finishes(configs, tmp_path):
    four, two, two_seed1 = configs
    results, root, lines = tmp_path / "results", tmp_path / "published", []
    pages = {"quickstart": {"a": [four], "b": [two_seed1]}, "small": {"small": [two]}}  # "small": no page
    progress = run_campaign(configs, "paper", results, chunk=10, root=root, pages=pages, say=lines.append)
    assert progress.done == 3 and "one page at a time" in lines[0]
    done = [line.split(":")[0] for line in lines if "every run finished and packed" in line]
    assert done == ["small", "b (of quickstart)", "a (of quickstart)", "quickstart"]
    small = lines.index(next(line for line in lines if line.startswith("small:")))
    assert lines[small - 1].startswith("packed 1 finished run(s)")  # packed before it is announced
    assert lines[small].endswith("(an experiment, not a page)")
    assert "./reproduce.sh --profile paper --only quickstart --from-archive --publish" in lines[-1]
    assert [len(read_manifest(p)[2]) for p in chunks(root)] == [1, 1, 1]


def test_campaign_pages_maps_each_name_to_its_distinct_runs():
    pages = campaign_pages(["quickstart", "fedeba_plus_ablations", "quickstart"], "smoke")
    assert list(pages) == ["quickstart", "fedeba_plus_ablations"]
    assert pages["quickstart"] == {"quickstart": campaign_configs(["quickstart"], "smoke")}
    assert list(pages["fedeba_plus_ablations"]) == list(PAGES["fedeba_plus_ablations"])
    assert pages["fedeba_plus_ablations"]["fedeba_table3_theta"] == campaign_configs(
        ["fedeba_table3_theta"], "smoke"
    )


def test_the_status_counts_each_experiments_runs_and_measures_their_hours(configs, tmp_path):
    four, two, two_seed1 = configs
    results, root = tmp_path / "results", tmp_path / "published"
    run_campaign([two], "paper", results, root=root, say=lambda _: None)  # archived in a chunk
    run_sweep([two_seed1], results, progress=False)  # finished, not packed
    pages = {"p": {"a": [two, four], "b": [two, two_seed1]}, "q": {"c": [four]}}
    rows = {(r.page, r.experiment): r for r in progress_table(pages, "paper", results, root)}
    assert list(rows) == [("p", "a"), ("p", "b"), ("p", "all"), ("q", "c"), ("all", "all")]
    counts = {key: (r.runs, r.archived, r.unpacked, r.left) for key, r in rows.items()}
    assert counts == {
        ("p", "a"): (2, 1, 0, 1),
        ("p", "b"): (2, 1, 1, 0),
        ("p", "all"): (3, 1, 1, 1),  # the run a and b share, once
        ("q", "c"): (1, 0, 0, 1),
        ("all", "all"): (3, 1, 1, 1),
    }
    seconds = {
        c.seed: run_seconds((results / config_hash(c) / "rounds.jsonl").read_text()) for c in (two, two_seed1)
    }
    assert seconds[0] > 0 and seconds[1] > 0
    assert rows["p", "b"].hours == pytest.approx((seconds[0] + seconds[1]) / 3600, rel=1e-12)
    rate = (seconds[0] + seconds[1]) / (cost_units(two) + cost_units(two_seed1))
    assert rows["q", "c"].hours_left == pytest.approx(rate * cost_units(four) / 3600, rel=1e-12)
    assert rows["p", "b"].hours_left == 0.0
    table = progress_markdown(list(rows.values())).splitlines()
    assert len(table) == 2 + 5 and table[-1].startswith("| **all** | **all** | 3 | 1 | 1 | 1 |")


def test_run_seconds_add_the_rounds_seconds_by_hand():
    rounds = '{"round": 1, "seconds": 0.25}\n{"round": 2, "seconds": 1.5}\n\n'
    assert run_seconds(rounds) == 1.75 and run_seconds(rounds.encode()) == 1.75
