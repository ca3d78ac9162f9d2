"""Publish a reproduction's results into a tracked folder: ``published/<profile>/``.

``reports/<profile>/`` (written by ``reproduce.sh``) holds everything a run produced and is not tracked by
git; the raw runs in ``results/`` are not either. :func:`publish` copies what a reader needs to see the
results without rerunning them: per notebook that succeeded, its tables (CSV and Markdown) and figures
(PNG), its ``status.json`` and a ``published.json`` (when the notebook ran, how long, from which commit:
``reproduce.sh`` records it in ``status.json``), and, given the results directory, the runs it loaded as
the run archive ``published/<profile>/runs/<notebook>.tar.xz`` (but those another archive holds: a campaign's
chunk, :mod:`fairfl_core.experiments.campaign`, or another page's; :mod:`fairfl_core.experiments.archive`:
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
from fairfl_core.experiments.campaign import archived_hashes
from fairfl_core.experiments.config import ExperimentConfig, config_hash
from fairfl_core.report.claims import RULE
from fairfl_core.report.index import (
    OPEN_ROWS,
    OUTCOMES,
    PROFILES,
    SMOKE_NOTE,
    NotebookFolder,
    former_rule_note,
    notebook_folders,
    page_meta,
    primary_digest,
    superseded_note,
    write_index,
)

__all__ = ["KEPT", "markdown_index", "page_sets", "publish"]

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
    and rewrite ``dest/README.md`` and ``dest/index.html``, and those of the other profiles' published
    folders beside it (their superseded notes); returns the published names."""
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
            archive.pack(
                folder.name,
                dest.name,
                _own_runs(dest, folder.name, configs),
                results_dir,
                dest.parent,
            )
        published.append(folder.name)
    # the other profiles' pages too: a quick page says which of its claims a paper page supersedes
    others = [
        dest.parent / p for p in PROFILES if p != dest.name and (dest.parent / p / "README.md").exists()
    ]
    for folder in [dest, *others] if dest.is_dir() else []:
        (folder / "README.md").write_text(markdown_index(folder))
        write_index(folder)
    return published


def page_sets(page: str | Path) -> list[str]:
    """The ``--set NAME=VALUE`` parameters a published page ran with (its ``status.json``: the list ``sets``,
    or the space-separated ``set`` of pages published before it), so that ``--from-archive`` rebuilds it."""
    status_file = Path(page) / "status.json"
    if not status_file.exists():
        return []
    status = json.loads(status_file.read_text())
    return list(status.get("sets", str(status.get("set", "")).split()))


def _uncommitted(status: dict, runs: list[dict] | None) -> str | None:
    """Why a notebook's results do not come from committed code (its run or one of its runs), or None."""
    if "uncommitted" in str(status.get("commit", "")):
        return f"ran from a tree with uncommitted changes ({status['commit']})"
    dirty = sorted({str(r.get("commit")) for r in runs or [] if str(r.get("commit", "")).endswith("-dirty")})
    if dirty:
        return f"runs computed by code with uncommitted changes ({', '.join(dirty)})"
    return None


def _own_runs(dest: Path, page: str, loaded: list[ExperimentConfig]) -> list[ExperimentConfig]:
    """What page ``page``'s run archive holds, so that the repository keeps each run once and loses none: the
    runs it ``loaded`` that no other archive of the profile holds (a campaign chunk, another page's archive),
    and the runs its former archive held that another published page lists (``published.json``) and no other
    archive holds."""
    elsewhere = archived_hashes(dest.name, dest.parent, excluding=page)
    former = dest / archive.ARCHIVES / f"{page}.tar.xz"
    held = {r.hash for r in archive.read_manifest(former)[2]} if former.exists() else set()
    listed = {
        run["hash"]
        for meta in dest.glob("*/published.json")
        if meta.parent.name != page
        for run in json.loads(meta.read_text()).get("runs") or ()
    }
    mine = [c for c in loaded if config_hash(c) not in elsewhere]
    kept = sorted((held & listed) - elsewhere - {config_hash(c) for c in mine})
    return mine + (archive.archived_configs(former, kept) if kept else [])


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


def _headline(nb: NotebookFolder) -> str:
    former = f"**{former_rule_note(nb.former_rule)}**" if nb.former_rule else ""
    if nb.counts is None:
        return former or "Claims: no claims table with an outcome column."
    counts = ", ".join(
        f"**{nb.counts[o]}** {o}" for o in OUTCOMES if o not in ("not decided", "not checked") or nb.counts[o]
    )
    line = f"Claims of the paper: {counts} (from {', '.join(nb.counted)})."
    if nb.scale_line():
        line += f" {nb.scale_line()[0].upper()}{nb.scale_line()[1:]}."
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
        f"Claims are decided under one rule (`report.claims.RULE`): {RULE}.",
        "",
    ]
    folders = notebook_folders(root)
    if not folders:
        lines.append("Nothing published yet.")
    for folder in folders:
        nb = NotebookFolder(folder)
        lines += [f"## {folder.name}", "", page_meta(folder), ""]
        note = superseded_note(folder, "../paper/README.md")
        lines += [note, ""] if note else []
        lines += [_headline(nb), ""]
        digest = primary_digest(folder)
        lines += (
            ["The paper's primary claims (abstract, contributions), decided here:", "", *digest, ""]
            if digest
            else []
        )
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
