"""The results page of a reproduction: ``reports/<profile>/index.html``.

A summary table over the notebooks, then per notebook (one paper or part of one):

- a headline: how many of the paper's claims fall in each verdict class, at the paper's scale and at a
  reduced one (counted from every claims table it wrote: a CSV with a ``claim`` column and an outcome
  column, the page's Holm-adjusted ``verdict``, see :func:`claim_outcome`);
- its main tables, the paper's numbers beside the reproduced ones (columns ``<metric> reproduced`` and
  ``<metric> paper``, as :func:`fairfl_core.report.tables.results_table` writes them), open when they have at
  most :data:`OPEN_ROWS` rows;
- its figures inline, sized to the page;
- the claims checklists and every other table folded (``<details>``), with links to the executed notebook and
  to the CSV/Markdown/LaTeX/PDF files.

A ``quick`` page names the claims a ``paper`` page decides at the paper's scale (:func:`superseded`, read
from the published pages' claims, :func:`page_claims`, grouped by paper, :func:`paper_pages`; the main
number, ``report/headline.py``, counts from the same readers).

The page is self-contained (inline CSS, relative links, no JavaScript). Layout read (written by
``reproduce.sh`` and the notebooks)::

    reports/<profile>/<name>/<notebook>.ipynb, <notebook>.html   executed notebook
    reports/<profile>/<name>/status.json                         {"status": "ok" | "failed", "seconds": ...}
    reports/<profile>/<name>/*.csv (+ .md, .tex)                 tables
    reports/<profile>/<name>/*.png (+ .pdf)                      figures

Run as ``python -m fairfl_core.report.index reports/<profile>``; ``scripts/screenshot_reports.sh`` renders
it in a headless browser.
"""

from __future__ import annotations

import html
import json
import re
import struct
import sys
from collections import Counter
from pathlib import Path

import pandas as pd

from fairfl_core.experiments.archive import ARCHIVES
from fairfl_core.report.claims import OBSERVATION, RULE

__all__ = [
    "OPEN_ROWS",
    "OUTCOMES",
    "SMOKE_NOTE",
    "SMOKE_OUTCOME",
    "NotebookFolder",
    "claim_counts",
    "claim_outcome",
    "KEY",
    "PROFILES",
    "PUBLISHED",
    "notebook_folders",
    "page_claims",
    "page_meta",
    "paper_pages",
    "primary_digest",
    "runs_header",
    "superseded",
    "inline_html",
    "superseded_note",
    "what_ran",
    "paper_claims",
    "undecided",
    "write_index",
]

OUTCOMES = (
    "holds",
    "smaller than the paper's",
    "not reproduced at the paper's size",
    "undetermined",
    "fails",
    "not decided",
    "not checked",
)
DECIDED = OUTCOMES[:5]  # the verdict classes (report.stats.VERDICTS)
CONCLUSIVE = ("holds", "smaller than the paper's", "not reproduced at the paper's size", "fails")
OUTCOME_COLUMNS = ("verdict", "outcome", "result", "holds")  # first one present is a claims table's outcome
PUBLISHED = Path(__file__).resolve().parents[2] / "published"
PROFILES = ("paper", "quick")  # the first profile that decides a claim supersedes the others
KEY = ["claim", "where"]  # a claim once per experiment (or, in a table without one, per dataset)
OPEN_ROWS = 25  # a main table with more rows is folded
FOLD_CHARS = 90  # a longer cell (an explanatory note) is folded behind its head
WIDE_PX = 1100  # figures wider than this (PNG pixels) span the page; narrower ones go two to a row

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:1.5em auto;padding:0 1em;color:#1f2328;
line-height:1.4}
h2{border-bottom:2px solid #d0d7de;padding-bottom:.2em;margin-top:2.2em}h3{margin:1.2em 0 .2em}
a{color:#0969da}.links{color:#59636e;font-size:.9em;margin:.2em 0}
.ok{color:#1a7f37}.failed{color:#cf222e;font-weight:bold}.unknown{color:#59636e}
.headline{font-size:1.05em;margin:.6em 0}
.badge{display:inline-block;padding:.1em .65em;border-radius:1em;font-weight:600;margin:0 .3em .2em 0}
.o-holds{background:#dafbe1;color:#116329}.o-noise{background:#fff8c5;color:#7d4e00}
.o-fails{background:#ffebe9;color:#a40e26}.o-na{background:#eff2f5;color:#59636e}
.scroll{max-width:100%;overflow-x:auto}
table{border-collapse:collapse;font-size:.8em;margin:.3em 0 .8em}
th,td{border:1px solid #d0d7de;padding:2px 6px;vertical-align:top;text-align:left;overflow-wrap:break-word}
th{background:#f6f8fa;font-weight:600}tbody tr:nth-child(even){background:#f9fafb}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
td.text{min-width:11em;max-width:30em}
table.summary td,table.summary th{padding:3px 10px}
details{border:1px solid #d0d7de;border-radius:6px;padding:.3em .7em;margin:.4em 0}
summary{cursor:pointer;font-weight:600}details[open] summary{margin-bottom:.3em}
details.cell{border:0;padding:0;margin:0}details.cell summary{font-weight:normal;color:#59636e}
.figs{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:1em;margin:.5em 0}
figure{margin:0}figure.wide{grid-column:1/-1}
img{width:100%;height:auto;border:1px solid #eee}figcaption{font-size:.85em;color:#59636e}
"""
_NUMBER = re.compile(r"^[-+]?(\d[\d,]*\.?\d*|\.\d+)([eE][-+]?\d+)?%?( ± [\d.]+([eE][-+]?\d+)?)?$")


def claim_outcome(value: object) -> str:
    """One of :data:`OUTCOMES` for a claims table's outcome cell: the verdict classes of ``report.stats``
    (holds, smaller than the paper's, not reproduced at the paper's size, undetermined, fails; also pass,
    true, fail, false), ``not decided`` (too few seeds, censored values), ``not checked`` for anything else
    (not checked (no offline data), not run, missing, n/a, empty). Case, spaces, ``_`` and ``-`` do not
    matter."""
    v = " ".join(str(value).strip().lower().replace("_", " ").replace("-", " ").split())
    if v.startswith("not decided"):
        return "not decided"
    if v.startswith("smaller"):
        return "smaller than the paper's"
    if v.startswith("not reproduced"):
        return "not reproduced at the paper's size"
    if v.startswith(("undetermined", "within")) or v in ("noise", "inconclusive"):
        return "undetermined"
    if v.startswith(("hold", "pass")) or v in ("true", "yes"):
        return "holds"
    if v.startswith("fail") or v in ("false", "no"):
        return "fails"
    return "not checked"


def _outcome_column(table: pd.DataFrame) -> str | None:
    return next((c for c in OUTCOME_COLUMNS if c in table.columns), None)


def paper_claims(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a claims table that are the paper's claims: ``kind`` ``paper``, not the package's
    observations nor analytic checks (without a ``kind`` column: a ``source`` that does not start with
    :data:`~fairfl_core.report.claims.OBSERVATION`)."""
    if "kind" in table.columns:
        return table[table["kind"] == "paper"]
    if "source" in table.columns:
        return table[~table["source"].astype(str).str.startswith(OBSERVATION)]
    return table


def at_paper_scale(table: pd.DataFrame) -> pd.Series:
    """Rows decided at the paper's scale: all its rounds (``rounds_share`` ≥ 1), its model and real data."""
    if not {"rounds_share", "model", "data"} <= set(table.columns):
        return pd.Series(False, index=table.index)
    share = pd.to_numeric(table["rounds_share"], errors="coerce")
    model = table["model"].astype(str).str.startswith("the paper's")
    return (share >= 1) & model & (table["data"].astype(str) == "real")


def claim_counts(table: pd.DataFrame, where: pd.Series | None = None) -> dict[str, int] | None:
    """The paper's claims (:func:`paper_claims`, of the rows ``where`` selects) per outcome (every key of
    :data:`OUTCOMES`) of a claims table, or ``None`` when it has none of the outcome columns
    :data:`OUTCOME_COLUMNS`. The package's observations and analytic checks are shown and never counted."""
    column = _outcome_column(table)
    if column is None:
        return None
    rows = paper_claims(table if where is None else table[where])
    counts = Counter(claim_outcome(v) for v in rows[column])
    return {o: counts.get(o, 0) for o in OUTCOMES}


def analytic_counts(table: pd.DataFrame) -> dict[str, int]:
    """The analytic checks (``kind`` analytic: formulas evaluated, properties by construction) per outcome."""
    column = _outcome_column(table)
    if column is None or "kind" not in table.columns:
        return {}
    return dict(Counter(claim_outcome(v) for v in table.loc[table["kind"] == "analytic", column]))


def scale_range(tables: list[pd.DataFrame]) -> str:
    """The shares of the paper's rounds of the decided paper claims not at its scale, e.g. ``4–20 %``."""
    shares = []
    for table in tables:
        column = _outcome_column(table)
        if column is None or "rounds_share" not in table.columns:
            continue
        rows = paper_claims(table[~at_paper_scale(table)])
        decided = rows[rows[column].map(claim_outcome).isin(DECIDED)]
        shares += list(pd.to_numeric(decided["rounds_share"], errors="coerce").dropna() * 100)
    if not shares:
        return "scale not recorded"
    low, high = min(shares), max(shares)
    rounds = "of the paper's rounds"
    return f"{low:.0f} % {rounds}" if round(low) == round(high) else f"{low:.0f}–{high:.0f} % {rounds}"


def _is_claims(table: pd.DataFrame) -> bool:
    return "claim" in table.columns


def _is_main(table: pd.DataFrame) -> bool:
    """The paper beside the reproduced numbers: a ``... reproduced`` and a ``... paper`` column."""
    cols = [str(c) for c in table.columns]
    return any(c.endswith(" reproduced") for c in cols) and any(c.endswith(" paper") for c in cols)


def _read(csv: Path) -> pd.DataFrame:
    """The CSV as written (every cell a string, empty if missing): the page keeps the notebook's rounding."""
    return pd.read_csv(csv, dtype=str, keep_default_na=False)


def _link(path: Path, root: Path, text: str | None = None) -> str:
    rel = path.relative_to(root).as_posix()
    return f'<a href="{html.escape(rel)}">{html.escape(text or path.name)}</a>'


def _status_file(folder: Path) -> dict:
    f = folder / "status.json"
    return json.loads(f.read_text()) if f.exists() else {}


def _status(folder: Path) -> tuple[str, str]:
    s = _status_file(folder)
    if not s:
        return "unknown", "not run by reproduce.sh"
    seconds = f" in {s['seconds']} s" if "seconds" in s else ""
    return s["status"], f"{s['status']}{seconds}"


SMOKE_OUTCOME = "not decided (smoke)"
SMOKE_NOTE = "smoke checks the pipeline, not the papers: no claim is decided at this profile"


def undecided(table: pd.DataFrame) -> pd.DataFrame:
    """A claims table with every outcome cell :data:`SMOKE_OUTCOME` (a smoke page decides nothing)."""
    column = _outcome_column(table)
    return table if column is None else table.assign(**{column: SMOKE_OUTCOME})


def _outcome_class(outcome: str) -> str:
    return {
        "holds": "o-holds",
        "smaller than the paper's": "o-noise",
        "not reproduced at the paper's size": "o-noise",
        "undetermined": "o-na",
        "fails": "o-fails",
    }.get(outcome, "o-na")


def _header(name: str) -> str:
    return html.escape(str(name)).replace("_", "_<wbr>")


_CODE = re.compile(r"`([^`]+)`")
_INLINE = (
    (re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)"), r'<a href="\2">\1</a>'),
    (re.compile(r"(?<!\w)_(.+?)_(?!\w)"), r"<em>\1</em>"),
)


def inline_html(text: str) -> str:
    """One line of the Markdown the published README uses (``**bold**``, ``_italic_``, ```code```,
    ``[text](link)``) as HTML, everything else escaped."""
    codes = _CODE.findall(text)
    out = html.escape(_CODE.sub("\0", text))  # a code span's place, kept out of the patterns
    for pattern, replacement in _INLINE:
        out = pattern.sub(replacement, out)
    first, *rest = out.split("\0")
    return first + "".join(f"<code>{html.escape(c)}</code>{p}" for c, p in zip(codes, rest, strict=True))


def _cell(text: str) -> str:
    """A cell's HTML: ``mean ± std`` may wrap before the ±; a text longer than :data:`FOLD_CHARS` is folded
    behind its head (up to the first colon, e.g. "not implemented", or its first words)."""
    if len(text) <= FOLD_CHARS:
        return html.escape(text).replace(" ± ", " ±&nbsp;")
    colon = text.find(":")
    head = text[:colon] if 0 < colon <= 40 else text[:40].rsplit(" ", 1)[0] + " …"
    return f"<details class='cell'><summary>{html.escape(head)}</summary>{html.escape(text)}</details>"


def _table(table: pd.DataFrame) -> str:
    """``table`` as HTML: numbers right-aligned, long text columns wrapped, outcome cells coloured. A column
    with one value in every row (e.g. the dataset) is stated once above the table instead."""
    outcome = _outcome_column(table) if _is_claims(table) else None
    results = {c for c in table.columns if str(c).endswith((" reproduced", " paper")) or c == outcome}
    same = [c for c in table.columns if len(table) > 1 and table[c].nunique() == 1 and c not in results]
    note = "; ".join(f"{c}: {table[c].iloc[0]}" for c in same if table[c].iloc[0])
    table = table.drop(columns=same)
    lengths = table.astype(str).apply(lambda col: col.str.len())
    text = {c for c in table.columns if ((lengths[c] > 40) & (lengths[c] <= FOLD_CHARS)).any()}  # wrapped
    head = "".join(f"<th>{_header(c)}</th>" for c in table.columns)
    rows = []
    for _, row in table.iterrows():
        cells = []
        for c in table.columns:
            v = str(row[c])
            if c == outcome:
                cls = _outcome_class(claim_outcome(v))
            else:
                cls = "text" if c in text else "num" if _NUMBER.match(v) else ""
            cells.append(f'<td class="{cls}">{_cell(v)}</td>' if cls else f"<td>{_cell(v)}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    caption = f"<p class='links'>Every row: {html.escape(note)}</p>" if note else ""
    table_html = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    return f'{caption}<div class="scroll">{table_html}</div>'


def _badges(counts: dict[str, int]) -> str:
    words = {"holds": "hold", "fails": "fail"}
    return " ".join(
        f'<span class="badge {_outcome_class(o)}">{counts[o]} {words.get(o, o)}</span>'
        for o in OUTCOMES
        if o not in ("not decided", "not checked") or counts[o]
    )


def _formats(csv: Path, root: Path) -> str:
    files = [csv.with_suffix(e) for e in (".csv", ".md", ".tex")]
    return " · ".join(_link(f, root, f.suffix[1:]) for f in files if f.exists())


def _png_width(png: Path) -> int | None:
    head = png.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n" or len(head) < 24:  # not a PNG, or cut short
        return None
    return struct.unpack(">I", head[16:20])[0]


def _figure(png: Path, root: Path) -> str:
    width = _png_width(png)
    wide = width is None or width > WIDE_PX
    pdf = png.with_suffix(".pdf")
    links = _link(png, root, "PNG") + (f" · {_link(pdf, root, 'PDF')}" if pdf.exists() else "")
    src = html.escape(png.relative_to(root).as_posix())
    return (
        f'<figure class="{"wide" if wide else "narrow"}"><img src="{src}" alt="{html.escape(png.stem)}">'
        f"<figcaption>{html.escape(png.stem)} · {links}</figcaption></figure>"
    )


def former_rule_note(tables: list[str]) -> str:
    """What a page must say when its claims tables were decided by a former rule (never counted)."""
    return (
        f"{', '.join(tables)}: decided by a former rule (without paired tests, the paper's size, Holm's "
        "adjustment or the scale of each verdict), so not counted here: not comparable with today's rule "
        "(report.claims.RULE); rerun the notebook to republish them."
    )


def _former_rule(table: pd.DataFrame) -> bool:
    """Whether a claims table was decided by a former rule: no ``kind`` or no ``verdict`` column (today's
    rule writes both: whose claim, and the verdict after the page's Holm adjustment)."""
    return not {"kind", "verdict"} <= set(table.columns)


def page_meta(folder: Path) -> str:
    """One paragraph on a published page (its ``published.json``): when it ran, how long, the commit, the
    ``--set`` parameters, the code that computed its runs and what ran (empty for an unpublished report)."""
    meta_file = folder / "published.json"
    meta = json.loads(meta_file.read_text()) if meta_file.exists() else {}
    if not meta:
        return ""
    ran = f"ran {meta['ran']} in {meta.get('seconds', '?')} s" if "ran" in meta else "run date unknown"
    where = f", commit {meta['commit']}" if "commit" in meta else ""
    params = f", parameters set: `{meta['set']}`" if meta.get("set") else ""  # reproduce.sh --set
    what = what_ran(meta.get("runs"))
    return f"_{ran}{where}{params}._ {runs_header(meta.get('runs'))}" + (f" {what}" if what else "")


DIGEST_ROWS = 24  # primary claims a page lists before pointing to its claims tables


def primary_digest(folder: Path) -> list[str]:
    """One line per decided primary claim of a page's counted claims tables (the paper's abstract and
    contributions): the claim, its verdict, the difference with its 95 % interval, the paper's size and the
    test; at most :data:`DIGEST_ROWS`, then how many more."""
    nb = NotebookFolder(folder)
    lines = []
    for csv, table in nb.claims.items():
        if csv.name not in nb.counted or "primary" not in table.columns:
            continue
        rows = paper_claims(table)
        rows = rows[
            (rows["primary"].astype(str) == "True") & rows["verdict"].map(claim_outcome).isin(DECIDED)
        ]
        for r in rows.itertuples():
            size = (
                f"; the paper's size {float(r.paper_effect):+.2f}"
                if r.paper_effect not in ("", "nan")
                else ""
            )
            low, high, test = float(r.interval_low), float(r.interval_high), r.test.split(":")[0]
            lines.append(
                f"- {r.claim} ({r.dataset}): **{r.verdict}**; d = {float(r.difference):+.2f} (95 % interval "
                f"{low:+.2f} to {high:+.2f}){size}; {test}"
            )
    if len(lines) > DIGEST_ROWS:
        lines = [*lines[:DIGEST_ROWS], f"- … and {len(lines) - DIGEST_ROWS} more in the claims tables below"]
    return lines


def page_claims(profile: str, page: str, root: Path) -> pd.DataFrame:
    """The paper's claims of one published page, with their outcome, scale and where they are."""
    folder = root / profile / page
    if not folder.is_dir():
        return pd.DataFrame()
    nb = NotebookFolder(folder)
    parts = []
    for csv in nb.claims:
        if csv.name not in nb.counted:
            continue
        table = pd.read_csv(csv)
        rows = paper_claims(table).copy()
        dataset = rows["dataset"].fillna("").astype(str) if "dataset" in rows else ""
        rows["where"] = rows["experiment"].astype(str) if "experiment" in rows else dataset
        rows["outcome"] = rows["verdict"].map(claim_outcome)
        rows["scale"] = at_paper_scale(rows).map({True: "paper", False: "reduced"})
        rows["profile"], rows["page"], rows["table"] = profile, page, csv.name
        parts.append(rows)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def paper_pages(root: str | Path = PUBLISHED) -> dict[str, tuple[str, ...]]:
    """Each paper's published pages, by the paper each page's bundle names (``Paper.title``, which
    ``reproduce.sh`` records in the page's ``status.json``; a page of the package's own names none), papers
    in alphabetical order, pages in name order."""
    pages: dict[str, list[str]] = {}
    for status in sorted(Path(root).glob("*/*/status.json")):
        paper = json.loads(status.read_text()).get("paper", "")
        if paper and status.parent.parent.name in PROFILES:
            pages.setdefault(paper, []).append(status.parent.name)
    return {paper: tuple(sorted(set(pages[paper]))) for paper in sorted(pages)}


def superseded(page: str, root: str | Path = PUBLISHED) -> pd.DataFrame:
    """The claims of a ``quick`` page decided on a ``paper`` page: claim, experiment (or dataset), the paper
    page's verdict and where it is."""
    root = Path(root)
    quick = page_claims("quick", page, root)
    paper = pd.concat([page_claims("paper", p, root) for p in _pages_with(page, root)], ignore_index=True)
    if quick.empty or paper.empty:
        return pd.DataFrame(columns=[*KEY, "verdict", "page"])
    paper = paper[paper["outcome"].isin(DECIDED)]
    hit = quick[KEY].merge(paper[[*KEY, "verdict", "page"]], on=KEY)
    return hit.drop_duplicates(KEY).reset_index(drop=True)


def _pages_with(page: str, root: Path) -> tuple[str, ...]:
    return next((pages for pages in paper_pages(root).values() if page in pages), (page,))


def superseded_note(folder: Path, paper_readme: str) -> str:
    """For a ``quick`` page: which of its claims a ``paper`` page decides at the paper's scale, linked."""
    if folder.parent.name != "quick":
        return ""
    gone = superseded(folder.name, folder.parent.parent)
    if gone.empty:
        return ""
    pages = ", ".join(f"[paper/{p}]({paper_readme}#{p})" for p in dict.fromkeys(gone["page"]))
    return (
        f"**{len(gone)} of this page's claims are decided at the paper's scale on {pages}, which supersedes "
        "them here** (their rows below are indicative only)."
    )


def runs_header(runs: list[dict] | None) -> str:
    """One line on the code that computed a page's runs: their numbers versions and commits, and how many were
    computed by another numbers version than this code's (``fairfl_core/numbers_version.py``)."""
    if runs is None:
        return (
            "Numbers version not recorded: these runs predate numbers versions, so this page may not be what "
            "this code computes; rerun the notebook to check."
        )
    from fairfl_core.numbers_version import numbers_version

    def current(run: dict) -> str | None:
        try:
            return numbers_version(run["algorithm"], run["model"])
        except (KeyError, ValueError):
            return None

    behind = [r for r in runs if r.get("numbers_version") != current(r)]
    versions = ", ".join(sorted({str(r.get("numbers_version")) for r in runs}))
    commits = sorted({str(r.get("commit")) for r in runs})
    by = f"commit {commits[0]}" if len(commits) == 1 else f"{len(commits)} commits ({', '.join(commits)})"
    line = f"{len(runs)} runs, numbers version(s) {versions}, computed by {by}"
    if behind:
        return (
            f"{line}. **{len(behind)} of them were computed by another numbers version than this code's**: "
            "rerun the notebook to refresh them."
        )
    return f"{line}: this code's numbers versions."


def what_ran(runs: list[dict] | None) -> str:
    """One line on what a page's runs are: their rounds, seeds, models, datasets (stand-ins labelled),
    partitions and client counts, each the set over the runs; several round budgets are named as such."""
    if not runs:
        return ""

    def values(key: str) -> list[str]:
        return sorted({str(r[key]) for r in runs if r.get(key) is not None}, key=_natural)

    rounds = values("rounds")
    parts = [
        f"{'round budgets' if len(rounds) > 1 else 'rounds'} {', '.join(rounds)}" if rounds else "",
        f"seeds {', '.join(values('seed'))}" if values("seed") else "",
        f"models {', '.join(values('model'))}" if values("model") else "",
        f"data {'; '.join(values('dataset'))}" if values("dataset") else "",
        f"partitions {', '.join(values('partition'))}" if values("partition") else "",
        f"clients {', '.join(values('clients'))}" if values("clients") else "",
    ]
    return "What ran: " + "; ".join(p for p in parts if p) + "."


def _natural(text: str) -> tuple:
    return (0, float(text), text) if text.replace(".", "", 1).isdigit() else (1, 0.0, text)


class NotebookFolder:
    """One notebook folder's files, sorted into claims, main and other tables, and figures."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.status = _status(folder)
        self.smoke = _status_file(folder).get("profile") == "smoke"
        self.tables = {csv: _read(csv) for csv in sorted(folder.glob("*.csv"))}
        if self.smoke:
            self.tables = {c: undecided(t) if _is_claims(t) else t for c, t in self.tables.items()}
        self.claims = {c: t for c, t in self.tables.items() if _is_claims(t)}
        self.former_rule = [c.name for c, t in self.claims.items() if _former_rule(t)]
        main = [c for c, t in self.tables.items() if c not in self.claims and _is_main(t)]
        # real data first, stand-ins after (a stand-in table has a "stand-in" column)
        self.main = {c: self.tables[c] for c in sorted(main, key=lambda c: "stand-in" in self.tables[c])}
        self.other = {c: t for c, t in self.tables.items() if c not in self.claims and c not in self.main}
        self.figures = sorted(folder.glob("*.png"))
        counted = {c: claim_counts(t) for c, t in self.claims.items()}
        self.unreadable = [c.name for c, n in counted.items() if n is None]
        self.counted = [  # the claims tables of the headline
            c.name for c, n in counted.items() if n is not None and c.name not in self.former_rule
        ]
        tables = [t for c, t in self.claims.items() if c.name in self.counted]
        self.counts = _sum(claim_counts(t) for t in tables) if tables else None
        self.paper_scale = _sum(claim_counts(t, at_paper_scale(t)) for t in tables) if tables else None
        self.indicative = _sum(claim_counts(t, ~at_paper_scale(t)) for t in tables) if tables else None
        self.shares = scale_range(tables)
        self.analytic: Counter[str] = Counter()
        for t in tables:
            self.analytic.update(analytic_counts(t))

    def scale_line(self) -> str:
        """The headline's counts split by scale: verdicts at the paper's scale, then indicative ones."""
        if self.counts is None or self.paper_scale is None or self.indicative is None:
            return ""
        parts = []
        for what, counts in (
            ("at the paper's scale", self.paper_scale),
            (f"indicative ({self.shares})", self.indicative),
        ):
            decided = sum(counts[o] for o in DECIDED)
            if decided:
                parts.append(f"{what}: " + ", ".join(f"{counts[o]} {o}" for o in DECIDED if counts[o]))
        analytic = ", ".join(f"{n} {o}" for o, n in sorted(self.analytic.items()))
        if analytic:
            parts.append(f"analytic checks (listed apart): {analytic}")
        return "; ".join(parts)

    def headline(self) -> str:
        if not self.claims:
            return '<p class="headline">Claims: no claims table.</p>'
        parts = []
        if self.counts is not None:
            sources = ", ".join(self.counted)
            parts.append(
                f"Claims of the paper: {_badges(self.counts)} "
                f"<span class='links'>(from {html.escape(sources)})</span>"
            )
            if self.scale_line():
                parts.append(html.escape(self.scale_line()))
        if self.smoke:
            parts.append(html.escape(SMOKE_NOTE))
        if self.unreadable:
            parts.append(
                f"{html.escape(', '.join(self.unreadable))}: no outcome column "
                f"({' / '.join(OUTCOME_COLUMNS)}); not counted"
            )
        if self.former_rule:
            parts.append(html.escape(former_rule_note(self.former_rule)))
        return f'<p class="headline">{"<br>".join(parts)}</p>'

    def _folded(self, csv: Path, table: pd.DataFrame, root: Path, what: str) -> str:
        counts = claim_counts(table) if csv in self.claims else None
        extra = f" {_badges(counts)}" if counts else ""
        size = f"{len(table)} rows × {len(table.columns)} columns"
        return (
            f"<details><summary>{what}: {html.escape(csv.stem)} <span class='links'>({size})</span>{extra}"
            f"</summary><p class='links'>{_formats(csv, root)}</p>{_table(table)}</details>"
        )

    def section(self, root: Path) -> str:
        status, text = self.status
        name = html.escape(self.folder.name)
        parts = [
            f'<h2 id="{name}">{name} <span class="{html.escape(status)}">[{html.escape(text)}]</span></h2>',
            self.headline(),
        ]
        notebooks = sorted(self.folder.glob("*.ipynb"))
        links = [
            _link(p.with_suffix(".html"), root, f"{p.stem} (HTML)")
            for p in notebooks
            if p.with_suffix(".html").exists()
        ]
        links += [_link(p, root) for p in notebooks]
        log = self.folder / "papermill.log"
        if log.exists():
            links.append(_link(log, root, "execution log"))
        parts.append(f"<p class='links'>Executed notebook: {' · '.join(links) or 'none'}</p>")
        meta, note = page_meta(self.folder), superseded_note(self.folder, "../paper/index.html")
        parts += [f"<p class='links'>{inline_html(text)}</p>" for text in (meta, note) if text]
        for csv, table in self.main.items():
            if len(table) <= OPEN_ROWS:
                parts.append(f"<h3>{html.escape(csv.stem)}</h3><p class='links'>{_formats(csv, root)}</p>")
                parts.append(_table(table))
            else:
                parts.append(self._folded(csv, table, root, "Table"))
        if self.figures:
            parts.append(f'<div class="figs">{"".join(_figure(p, root) for p in self.figures)}</div>')
        parts += [self._folded(c, t, root, "Claims") for c, t in self.claims.items()]
        parts += [self._folded(c, t, root, "Table") for c, t in self.other.items()]
        return "\n".join(parts)

    def summary_row(self) -> str:
        status, text = self.status
        name = html.escape(self.folder.name)
        former = " (former rule)" if self.former_rule else ""
        counts = (
            "".join(f'<td class="num">{self.counts[o]}</td>' for o in OUTCOMES)
            if self.counts
            else f'<td colspan="{len(OUTCOMES)}">no claims counted{former}</td>'
        )
        return (
            f'<tr><td><a href="#{name}">{name}</a></td>'
            f'<td class="{html.escape(status)}">{html.escape(text)}</td>{counts}'
            f'<td class="num">{len(self.tables)}</td><td class="num">{len(self.figures)}</td></tr>'
        )


def _sum(counts) -> dict[str, int]:
    total: Counter[str] = Counter()
    for c in counts:
        total.update(c or {})
    return {o: total.get(o, 0) for o in OUTCOMES}


def notebook_folders(root: Path) -> list[Path]:
    """The notebook folders of a reports or published directory (not its run archives' folder)."""
    return sorted(d for d in root.iterdir() if d.is_dir() and d.name != ARCHIVES)


def write_index(reports_dir: str | Path) -> Path:
    """Write ``<reports_dir>/index.html`` over every notebook folder in ``reports_dir``; returns its path."""
    root = Path(reports_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"reports directory {root} does not exist; run ./reproduce.sh first")
    notebooks = [NotebookFolder(d) for d in notebook_folders(root)]
    head = "".join(f"<th>{o}</th>" for o in ("notebook", "run", *OUTCOMES, "tables", "figures"))
    summary = (
        f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>'
        f"{''.join(n.summary_row() for n in notebooks)}</tbody></table>"
        if notebooks
        else "<p>No notebooks were run.</p>"
    )
    body = "\n".join(n.section(root) for n in notebooks)
    title = f"fairfl reproduction: profile {html.escape(root.name)}"
    page = (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{title}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{title}</h1>"
        f"<p>Claims per notebook: each paper statement checked on the reproduced runs; tables give the "
        f"paper's number beside the reproduced mean ± std over seeds.</p><p class='links'>The rule "
        f"(report.claims.RULE): {html.escape(RULE)}.</p>{summary}\n{body}\n</body></html>\n"
    )
    out = root / "index.html"
    out.write_text(page)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m fairfl_core.report.index reports/<profile>")
    print(write_index(sys.argv[1]))
