"""GIFAIR-FL's Shakespeare settings (GIFAIR-FL §5.2): which LEAF-style role clients, which groups.

* ``"individual"`` (Table 5, individual fairness, d = K = 31): 31 roles drawn uniformly without replacement
  from the roles with at least 64 windows (the q-FFL LEAF preprocessing ``-k 64``, which GIFAIR-FL follows,
  "McMahan et al. 2017 and Li et al. 2019a"); no groups (GIFAIR treats every client as its own group).
* ``"gender"`` (Table 6, group fairness by gender, d = 2, K = 35): 25 male and 10 female roles drawn
  uniformly without replacement from the roles with at least 64 windows (every role the loader keeps) whose
  gender is stated, as the paper draws them ("25 male and 10 female devices", no size floor; the male group
  "implicitly" has more text); group 0 = male, 1 = female. ``min_windows=2000`` restricts both genders to
  the large roles (the labelled Table 6 variant ``gifair_table6_shakespeare_gender_2000_windows``).
  The paper took gender from shakespeare.folger.edu; offline we read it from each play's own "Persons
  Represented" list: ``resources/shakespeare_roles.csv`` cites, for every role client with at least
  ``TABLE_MIN_WINDOWS`` windows, the line of the list that names it and how the list states the gender (see
  the file's header). Roles whose gender the list does not state are never drawn.

The draws come from a dataset seed (the client/group composition is fixed by a dataset seed).
``window_stride`` keeps every s-th window of each role's train and test windows (relative role sizes, and the
leak-free gap, kept), a cheaper variant for short profiles; 1 is LEAF's data. The paper's 70/10/20 split: the
loader's LEAF split (first ``train_frac`` windows train, the rest test), and ``DataSpec.val_frac`` carves the
validation part from the end of each role's training windows behind a leak-free gap (``meta["window_gap"]``,
rescaled here to the kept windows).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np
import torch

from .federated import Dataset
from .shakespeare import _read_roles, load_shakespeare, prepare_shakespeare, role_text, split_windows

__all__ = [
    "ROLE_TABLE",
    "SETTINGS",
    "TABLE_MIN_WINDOWS",
    "RoleRecord",
    "RoleSelection",
    "RoleSetting",
    "load_gifair_shakespeare",
    "read_role_table",
    "role_windows",
    "select_roles",
    "thin_windows",
]

ROLE_TABLE = Path(__file__).parent / "resources" / "shakespeare_roles.csv"
TABLE_MIN_WINDOWS = 64  # the gender table lists every role client with at least this many windows
GENDERS = ("male", "female", "unstated")
ALL_ROLES = "all"  # the one "group" of a setting without groups


@dataclass(frozen=True)
class RoleRecord:
    """One row of the gender table: a role client (``play_ROLE`` as the loader names it) and its citation."""

    play: str
    role: str
    gender: str
    evidence: str
    source_line: int
    source_text: str
    note: str = ""


def read_role_table(path: str | os.PathLike = ROLE_TABLE) -> list[RoleRecord]:
    """The rows of the role → gender table (``#`` lines are its header comment)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"role table {path} not found; it ships with fairfl_core/data/resources/")
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(line for line in fh if not line.startswith("#")))
    expected = [f.name for f in fields(RoleRecord)]
    if not rows or list(rows[0]) != expected:
        raise ValueError(f"{path}: columns must be {expected}, got {list(rows[0]) if rows else 'no rows'}")
    records = [
        RoleRecord(
            r["play"],
            r["role"],
            r["gender"],
            r["evidence"],
            int(r["source_line"]),
            r["source_text"],
            r["note"],
        )
        for r in rows
    ]
    bad = sorted({r.gender for r in records} - set(GENDERS))
    if bad:
        raise ValueError(f"{path}: gender values {bad} are not in {GENDERS}; fix those rows")
    return records


def role_windows(
    root: str | os.PathLike | None = None,
    *,
    seq_len: int = 80,
    min_lines: int = 3,
    train_frac: float = 0.8,
    split: str = "leak_free",
) -> dict[str, int]:
    """Windows per role client over all plays (``len(text) − seq_len``, as the loader cuts them), without
    building any tensor. Roles left without a test window by the loader's split (which drops them, as LEAF
    does) are left out."""
    roles, _ = _read_roles(prepare_shakespeare(root), None, min_lines)
    sizes = {cid: len(role_text(lines)) - seq_len for cid, lines in roles.items()}
    return {
        cid: n
        for cid, n in sizes.items()
        if n >= 2 and len(split_windows(n, train_frac, seq_len, split, np.random.default_rng(0))[1])
    }


@dataclass(frozen=True)
class RoleSetting:
    """Roles drawn per group (``{"all": n}``: no groups) and the fewest windows a role needs."""

    counts: Mapping[str, int]
    min_windows: int
    paper: str


SETTINGS: dict[str, RoleSetting] = {
    "individual": RoleSetting({ALL_ROLES: 31}, 64, "GIFAIR-FL Table 5 (d = K = 31)"),
    "gender": RoleSetting({"male": 25, "female": 10}, TABLE_MIN_WINDOWS, "GIFAIR-FL Table 6 (d = 2, K = 35)"),
}


@dataclass(frozen=True)
class RoleSelection:
    """The drawn roles (sorted within each group, groups in the setting's order) and their group ids."""

    setting: str
    roles: tuple[str, ...]
    groups: tuple[int, ...]  # -1 for every role when the setting has no groups
    group_names: tuple[str, ...] | None
    min_windows: int
    seed: int
    table: dict = field(default_factory=dict, compare=False)  # role -> its RoleRecord (gender settings)


def _candidates(group: str, windows: Mapping[str, int], min_windows: int, table: dict) -> list[str]:
    if group == ALL_ROLES:
        return sorted(cid for cid, n in windows.items() if n >= min_windows)
    return sorted(r for r, rec in table.items() if rec.gender == group and windows.get(r, -1) >= min_windows)


def select_roles(
    setting: str,
    windows: Mapping[str, int],
    *,
    seed: int = 0,
    counts: Mapping[str, int] | None = None,
    min_windows: int | None = None,
    table: list[RoleRecord] | None = None,
) -> RoleSelection:
    """Draw the roles of ``setting`` (see ``SETTINGS``) uniformly without replacement, group by group, from
    ``windows`` (role → number of windows, e.g. `role_windows`). ``counts`` / ``min_windows`` override the
    setting's (for smaller runs); gender groups need ``min_windows >= TABLE_MIN_WINDOWS``, the table's
    coverage."""
    if setting not in SETTINGS:
        raise ValueError(f"setting={setting!r} is unknown; choose one of {sorted(SETTINGS)}")
    spec = SETTINGS[setting]
    counts = dict(spec.counts if counts is None else counts)
    min_windows = spec.min_windows if min_windows is None else int(min_windows)
    if set(counts) != set(spec.counts):
        raise ValueError(
            f"counts for setting {setting!r} must have the keys {sorted(spec.counts)}, got {counts}"
        )
    if any(n < 1 for n in counts.values()):
        raise ValueError(f"counts={counts}: every group needs at least 1 role")
    grouped = ALL_ROLES not in counts
    if grouped and min_windows < TABLE_MIN_WINDOWS:
        raise ValueError(
            f"min_windows={min_windows}: the gender table covers only roles with >= {TABLE_MIN_WINDOWS} "
            f"windows, so gender groups need min_windows >= {TABLE_MIN_WINDOWS}"
        )
    by_role = {r.role: r for r in (table if table is not None else read_role_table())} if grouped else {}
    rng = np.random.default_rng(seed)
    roles, groups = [], []
    for g, (group, n) in enumerate(counts.items()):
        pool = _candidates(group, windows, min_windows, by_role)
        if len(pool) < n:
            raise ValueError(
                f"setting {setting!r}: {n} {group} roles requested but only {len(pool)} have >= "
                f"{min_windows} windows: lower the count or min_windows"
            )
        roles += sorted(rng.choice(pool, size=n, replace=False).tolist())
        groups += [g if grouped else -1] * n
    return RoleSelection(
        setting=setting,
        roles=tuple(roles),
        groups=tuple(groups),
        group_names=tuple(counts) if grouped else None,
        min_windows=min_windows,
        seed=seed,
        table={r: by_role[r] for r in roles} if grouped else {},
    )


def _rank_within_owner(owner: np.ndarray) -> np.ndarray:
    """Position of each sample among its owner's samples, in their order."""
    order = np.argsort(owner, kind="stable")
    ranked = owner[order]
    rank = np.empty(len(owner), dtype=np.int64)
    rank[order] = np.arange(len(owner)) - np.searchsorted(ranked, ranked, side="left")
    return rank


def thin_windows(dataset: Dataset, stride: int) -> Dataset:
    """Keep every ``stride``-th train and test window of each owner (the first, the (s+1)-th, ...). A gap of
    g windows between two parts (``meta["window_gap"]``: windows g + 1 apart share no input character)
    becomes ceil((g + 1) / stride) - 1 kept windows."""
    if stride < 1:
        raise ValueError(f"window_stride={stride} must be >= 1 (1 keeps every window)")
    if stride == 1:
        return dataset
    if dataset.owner_train is None or dataset.owner_test is None:
        raise ValueError(f"{dataset.name}: thinning windows needs per-owner samples (owner_train/owner_test)")
    kept = {}
    for split in ("train", "test"):
        owner = getattr(dataset, f"owner_{split}")
        keep = torch.from_numpy(_rank_within_owner(owner.numpy()) % stride == 0)
        kept.update(
            {
                f"x_{split}": getattr(dataset, f"x_{split}")[keep],
                f"y_{split}": getattr(dataset, f"y_{split}")[keep],
            }
        )
        kept[f"owner_{split}"] = owner[keep]
    meta = {**dataset.meta, "window_stride": stride}
    if "window_gap" in meta:
        meta["window_gap"] = -(-(meta["window_gap"] + 1) // stride) - 1
    return replace(dataset, **kept, meta=meta)


def load_gifair_shakespeare(
    root: str | os.PathLike | None = None,
    *,
    setting: str = "gender",
    seed: int = 0,
    counts: Mapping[str, int] | None = None,
    min_windows: int | None = None,
    window_stride: int = 1,
    **options,
) -> Dataset:
    """LEAF-style Shakespeare restricted to the roles of a GIFAIR-FL setting (only those are windowed).

    ``options`` go to `load_shakespeare` (seq_len, train_frac, min_lines, split). ``meta`` gains
    ``owner_groups`` (group id per owner, aligned with ``owner_names``; -1 without groups), ``group_names``
    and ``role_selection`` (the drawn roles, their windows and, for gender, the cited table rows).
    """
    if "roles" in options or "max_roles" in options or "plays" in options:
        raise ValueError(
            "the GIFAIR-FL setting chooses the roles: drop roles/max_roles/plays from the options"
        )
    split_options = {k: options[k] for k in ("seq_len", "min_lines", "train_frac", "split") if k in options}
    windows = role_windows(root, **split_options)
    sel = select_roles(setting, windows, seed=seed, counts=counts, min_windows=min_windows)
    dataset = thin_windows(load_shakespeare(root, roles=sel.roles, **options), window_stride)
    group_of = dict(zip(sel.roles, sel.groups, strict=True))
    assert dataset.owner_names is not None  # load_shakespeare names every role client
    owner_groups = [group_of[name] for name in dataset.owner_names]
    selection = {
        "setting": setting,
        "paper": SETTINGS[setting].paper,
        "seed": seed,
        "min_windows": sel.min_windows,
        "roles": {r: {"group": g, "windows": windows[r]} for r, g in zip(sel.roles, sel.groups, strict=True)},
        "table_rows": {r: rec.__dict__ for r, rec in sel.table.items()},
    }
    what = f"GIFAIR-FL {setting} roles ({SETTINGS[setting].paper}; dataset seed {seed})"
    return replace(
        dataset,
        source=f"{dataset.source}; {what}",
        meta={
            **dataset.meta,
            "owner_groups": owner_groups,
            "group_names": list(sel.group_names) if sel.group_names else None,
            "role_selection": selection,
        },
    )
