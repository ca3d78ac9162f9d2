"""Publish a reproduction's results into a tracked folder: ``published/<profile>/``.

``reports/<profile>/`` (written by ``reproduce.sh``) holds everything a run produced and is not tracked by
git; the raw runs in ``results/`` are not either. :func:`publish` copies what a reader needs to see the
results without rerunning them: per notebook that succeeded, its tables (CSV and Markdown) and figures
(PNG), its ``status.json`` and a ``published.json`` (when the notebook ran, how long, from which commit:
``reproduce.sh`` records it in ``status.json``), and, given the results directory, the runs it loaded as
the run archive ``published/<profile>/runs/<notebook>.tar.xz`` (:mod:`fairfl_core.experiments.archive`:
``reproduce.sh --from-archive`` rebuilds the page from it). It then writes two pages over the published
folder: ``README.md`` (rendered by any Git host: the claims headline per notebook, its main tables inline, its
figures) and ``index.html`` (the page of :func:`fairfl_core.report.index.write_index`).

A notebook that failed or never ran is not published, nor one that ran from a tree with uncommitted changes
or read runs computed by such code (their commits end in ``-dirty``); its earlier published folder is kept.
Run as ``python -m fairfl_core.report.publish reports/<profile> published/<profile> [results/<profile>]``
or ``./reproduce.sh --publish``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from fairfl_core.experiments import archive
from fairfl_core.report.index import (
    OPEN_ROWS,
    OUTCOMES,
    SMOKE_NOTE,
    NotebookFolder,
    former_rule_note,
    notebook_folders,
    write_index,
)

__all__ = ["KEPT", "markdown_index", "publish"]

KEPT = (".csv", ".md", ".png")  # tables and figures; LaTeX, PDF, the executed notebook and logs stay out


def _published_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in KEPT)


def publish(
    reports_dir: str | Path,
    dest: str | Path,
    results_dir: str | Path | None = None,
    only: Sequence[str] | None = None,
) -> list[str]:
    """Copy every successful notebook folder of ``reports_dir`` (``only``: of these notebooks, e.g. the ones
    that just ran; a report left from an earlier run is not republished) to ``dest`` (replacing that
    notebook's earlier copy), pack the runs it loaded from ``results_dir`` (if given) into its run archive,
    and rewrite ``dest/README.md`` and ``dest/index.html``; returns the published names."""
    src, dest = Path(reports_dir), Path(dest)
    if not src.is_dir():
        raise FileNotFoundError(f"reports directory {src} does not exist; run ./reproduce.sh first")
    folders = notebook_folders(src)
    if only is not None:
        unknown = sorted(set(only) - {f.name for f in folders})
        if unknown:
            raise ValueError(f"no report of notebook(s) {unknown} under {src}: run them first")
        folders = [f for f in folders if f.name in only]
    published = []
    for folder in folders:
        status_file = folder / "status.json"
        status = json.loads(status_file.read_text()) if status_file.exists() else {"status": "not run"}
        if status.get("status") != "ok":
            print(f"publish: {folder.name}: {status.get('status')}, not published", file=sys.stderr)
            continue
        dirty = _uncommitted(status, runs_provenance(folder / "runs.jsonl"))
        if dirty:
            print(
                f"publish: {folder.name}: {dirty}, not published; commit the changes and run it again",
                file=sys.stderr,
            )
            continue
        out = dest / folder.name
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        for f in (*_published_files(folder), status_file):
            shutil.copy2(f, out / f.name)
        ran = datetime.fromtimestamp(status_file.stat().st_mtime, timezone.utc)
        (out / "published.json").write_text(
            json.dumps(
                {
                    "ran": ran.strftime("%Y-%m-%d %H:%M UTC"),
                    "commit": "not recorded",
                    **status,
                    "runs": runs_provenance(folder / "runs.jsonl"),
                },
                indent=1,
            )
            + "\n"
        )
        if results_dir is not None and (folder / "runs.jsonl").exists():
            configs = archive.ledger_runs(folder / "runs.jsonl", results_dir)
            archive.pack(folder.name, dest.name, configs, results_dir, dest.parent)
        published.append(folder.name)
    if dest.is_dir():
        (dest / "README.md").write_text(markdown_index(dest))
        write_index(dest)
    return published


def _uncommitted(status: dict, runs: list[dict] | None) -> str | None:
    """Why a notebook's results do not come from committed code (its run or one of its runs), or None."""
    if "uncommitted" in str(status.get("commit", "")):
        return f"ran from a tree with uncommitted changes ({status['commit']})"
    dirty = sorted({str(r.get("commit")) for r in runs or [] if str(r.get("commit", "")).endswith("-dirty")})
    if dirty:
        return f"runs computed by code with uncommitted changes ({', '.join(dirty)})"
    return None


def runs_provenance(ledger: Path) -> list[dict] | None:
    """The distinct runs a notebook's tables were read from (``reproduce.sh``'s ``runs.jsonl``, written by
    ``load_runs``): hash, algorithm, model, numbers version and commit each; None without a ledger."""
    if not ledger.exists():
        return None
    runs = {}
    for line in ledger.read_text().splitlines():
        record = json.loads(line)
        runs[record["hash"]] = record
    return [runs[h] for h in sorted(runs)]


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


def _headline(nb: NotebookFolder) -> str:
    former = f"**{former_rule_note(nb.former_rule)}**" if nb.former_rule else ""
    if nb.counts is None:
        return former or "Claims: no claims table with an outcome column."
    counts = ", ".join(
        f"**{nb.counts[o]}** {o}" for o in OUTCOMES if o not in ("not decided", "not checked") or nb.counts[o]
    )
    line = f"Claims of the paper: {counts} (from {', '.join(nb.counted)})."
    if nb.smoke:
        line += f" {SMOKE_NOTE[0].upper()}{SMOKE_NOTE[1:]}."
    return f"{line} {former}" if former else line


def _markdown_table(md: Path) -> str:
    return md.read_text().strip() if md.exists() else f"(no Markdown copy of {md.stem})"


def markdown_index(dest: str | Path) -> str:
    """``README.md`` of a published folder: per notebook, when it ran, its claims headline, its main tables
    (paper beside reproduced; inline up to :data:`OPEN_ROWS` rows, linked above), its figures and links to
    its other tables."""
    root = Path(dest)
    profile = root.name
    lines = [
        f"# Published results: profile `{profile}`",
        "",
        "Generated by `python -m fairfl_core.report.publish` from `reports/"
        f"{profile}/` (`./reproduce.sh --profile {profile} --publish`); do not edit by hand. Each notebook's "
        "tables give the paper's number beside the reproduced mean ± std over seeds; rows on a stand-in "
        "dataset say so in their `stand-in` column and compare with the paper on the direction and size "
        "of an effect, not on the raw number. `index.html` is the same page for a browser.",
        "",
    ]
    folders = notebook_folders(root)
    if not folders:
        lines.append("Nothing published yet.")
    for folder in folders:
        nb = NotebookFolder(folder)
        meta_file = folder / "published.json"
        meta = json.loads(meta_file.read_text()) if meta_file.exists() else {}
        ran = f"ran {meta['ran']} in {meta.get('seconds', '?')} s" if "ran" in meta else "run date unknown"
        where = f", commit {meta['commit']}" if "commit" in meta else ""
        params = f", parameters set: `{meta['set']}`" if meta.get("set") else ""  # reproduce.sh --set
        runs = runs_header(meta.get("runs"))
        what = what_ran(meta.get("runs"))
        lines += [f"## {folder.name}", "", f"_{ran}{where}{params}._ {runs}", ""]
        lines += [what, ""] if what else []
        lines += [_headline(nb), ""]
        for csv, table in nb.main.items():
            md = csv.with_suffix(".md")
            lines.append(f"### [{csv.stem}]({folder.name}/{md.name}) ([CSV]({folder.name}/{csv.name}))")
            lines.append("")
            if len(table) <= OPEN_ROWS:
                lines += [_markdown_table(md), ""]
            else:
                lines += [f"{len(table)} rows: open the Markdown file.", ""]
        lines += [f"![{png.stem}]({folder.name}/{png.name})" for png in nb.figures]
        others = [*nb.claims, *nb.other]
        if others:
            links = ", ".join(f"[{c.stem}]({folder.name}/{c.with_suffix('.md').name})" for c in others)
            lines += ["", f"Other tables: {links}.", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m fairfl_core.report.publish",
        description="Publish notebook reports: tables, figures, run archives, README.md and index.html",
    )
    parser.add_argument("reports", help="reports/<profile>")
    parser.add_argument("dest", help="published/<profile>")
    parser.add_argument("results", nargs="?", help="results/<profile>: pack each page's runs")
    parser.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="publish only these notebooks")
    args = parser.parse_args(argv)
    try:
        names = publish(args.reports, args.dest, args.results, args.only)
    except (FileNotFoundError, ValueError) as e:
        sys.exit(f"publish: {e}")
    print(f"published {len(names)} notebook(s) to {args.dest}: {', '.join(names) or 'none'}")


if __name__ == "__main__":
    main()
