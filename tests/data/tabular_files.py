"""Small Adult and COMPAS files in the real on-disk formats (``data/tabular.py``), for tests that run the
pipeline on them: UCI's comma + space separated records with ``?`` and the test file's comment line and
trailing ``.``; ProPublica's CSV with its columns and rows that its filter drops."""

from __future__ import annotations

from pathlib import Path

import numpy as np

WORKCLASS = ("Private", "State-gov", "Self-emp-inc")
MARITAL = ("Never-married", "Married-civ-spouse", "Divorced")
OCCUPATION = ("Sales", "Exec-managerial", "Craft-repair")
RELATIONSHIP = ("Own-child", "Husband", "Wife", "Not-in-family")
RACE = ("White", "Black", "Asian-Pac-Islander")
COUNTRY = ("United-States", "Mexico")
# 5 numerical + one-hot workclass, marital, occupation, relationship, race, sex, country
ADULT_FEATURES = 5 + len(WORKCLASS) + len(MARITAL) + len(OCCUPATION) + len(RELATIONSHIP) + len(RACE) + 2 + 2
COMPAS_RACES = ("African-American", "Caucasian", "Hispanic", "Other")
COMPAS_FEATURES = 5 + 2 + 3 + len(COMPAS_RACES) + 2


def _adult_rows(n: int, rng: np.random.Generator, test: bool) -> list[str]:
    rows = []
    for i in range(n):
        sex = ("Female", "Male")[i % 2]
        education = int(rng.integers(5, 16))
        label = ">50K" if education + 3 * (sex == "Male") + rng.normal(0, 2) > 13 else "<=50K"
        fields = [
            str(int(rng.integers(18, 70))),
            "?" if i % 17 == 5 else str(rng.choice(WORKCLASS)),
            str(int(rng.integers(20000, 300000))),
            "HS-grad",
            str(education),
            str(rng.choice(MARITAL)),
            str(rng.choice(OCCUPATION)),
            str(rng.choice(RELATIONSHIP)),
            str(rng.choice(RACE)),
            sex,
            str(int(rng.integers(0, 3) * 1000)),
            "0",
            str(int(rng.integers(20, 60))),
            str(rng.choice(COUNTRY)),
            label + ("." if test else ""),
        ]
        rows.append(", ".join(fields))
    return rows


def adult_texts(n_train: int = 60, n_test: int = 30, seed: int = 0) -> tuple[str, str]:
    """``adult.data`` and ``adult.test`` with both sexes and labels in each split (every 17th row from the
    sixth on has a missing workclass)."""
    rng = np.random.default_rng(seed)
    train = "\n".join(_adult_rows(n_train, rng, False)) + "\n"
    test = "|1x3 Cross validator\n" + "\n".join(_adult_rows(n_test, rng, True)) + "\n\n"
    return train, test


def compas_text(n: int = 60, seed: int = 0) -> str:
    """``compas-scores-two-years.csv`` with ProPublica's columns (``priors_count`` twice, as the real file),
    ``n`` rows that pass ProPublica's filter and 4 that do not."""
    rng = np.random.default_rng(seed)
    header = (
        "id,sex,age,age_cat,race,juv_fel_count,decile_score,juv_misd_count,juv_other_count,priors_count,"
        "days_b_screening_arrest,c_charge_degree,is_recid,score_text,priors_count,two_year_recid"
    )
    lines = [header]
    failing = [(45, "F", 1, "Low"), (0, "F", -1, "Low"), (0, "O", 1, "Low"), (0, "F", 1, "N/A")]
    for i in range(n + len(failing)):
        passing = (int(rng.integers(-30, 31)), "FM"[i % 2], 1, "Low")
        days, degree, recid, score = failing[i - n] if i >= n else passing
        age = int(rng.integers(18, 70))
        category = "Less than 25" if age < 25 else "Greater than 45" if age > 45 else "25 - 45"
        race = COMPAS_RACES[i % len(COMPAS_RACES)]
        priors = int(rng.integers(0, 10))
        label = int(priors + 2 * (race == "African-American") + rng.normal(0, 2) > 5)
        sex = ("Female", "Male")[i % 3 != 0]
        fields = (
            i,
            sex,
            age,
            category,
            race,
            0,
            5,
            i % 2,
            0,
            priors,
            days,
            degree,
            recid,
            score,
            priors,
            label,
        )
        lines.append(",".join(map(str, fields)))
    return "\n".join(lines) + "\n"


def write_tabular(root: Path, seed: int = 0) -> Path:
    """The three files where ``prepare_tabular`` extracts them under the data root ``root``."""
    train, test = adult_texts(seed=seed)
    (root / "adult").mkdir(parents=True, exist_ok=True)
    (root / "compas").mkdir(parents=True, exist_ok=True)
    (root / "adult" / "adult.data").write_text(train)
    (root / "adult" / "adult.test").write_text(test)
    (root / "compas" / "compas-scores-two-years.csv").write_text(compas_text(seed=seed))
    return root
