#!/usr/bin/env bash
# Reproduce every paper notebook at one profile and build an HTML index of the results.
#
#   ./reproduce.sh [--profile smoke|quick|paper] [--only NAME] [--device DEV] [--workers N] [--publish]
#                  [--set NAME=VALUE ...] [--from-archive] [--no-setup]
#
#   --profile  smoke: seconds per notebook (CI); quick: shorter faithful runs on a 2-core CPU;
#              paper: the papers' rounds and seeds (default: smoke)
#   --only     run only notebook NAME (e.g. quickstart or 00_quickstart)
#   --device   auto | cpu | cuda | cuda:N (default: auto)
#   --workers  run each notebook's runs in a pool of N processes (each with cores/N torch threads) instead
#              of one after another in the notebook's kernel; the small models of the quick profiles run
#              faster as one single-threaded run per core (--workers $(nproc)); numbers are the same
#   --set      set a notebook parameter (its first cell) to a YAML value in every notebook run, e.g.
#              --only fedeba_plus --set 'columns=[FashionMNIST]'; a notebook without that parameter gets it too
#   --publish  also copy the tables (CSV, Markdown) and figures (PNG) of each notebook this call ran that
#              succeeded into the tracked folder published/<profile>/ and rewrite its README.md and index.html,
#              and pack the runs each notebook loaded into published/<profile>/runs/<notebook>.tar.xz (commit
#              them); reports left in reports/<profile>/ by earlier calls are not republished
#   --from-archive  unpack published/<profile>/runs/*.tar.xz (and the campaign chunks runs/chunks/*.tar.xz)
#              into results/<profile>/ and rebuild each page with the --set parameters it was published with
#              (its published/<profile>/<name>/status.json), unless --set is given and build the pages
#              from them without computing anything; a notebook that lacks runs fails, naming them
#   --no-setup skip scripts/setup.sh (the environment and data are already prepared, e.g. in CI)
#
# Sets up .venv and the offline data (scripts/setup.sh), then executes each notebooks/*.ipynb with papermill:
# runs are cached in results/<profile>/ (finished runs are reused, interrupted ones resume), and the
# executed notebook (.ipynb and .html), its tables and figures go to reports/<profile>/<name>/.
# reports/<profile>/index.html links them all. A failing notebook is reported by name and the others still
# run; the exit status is 0 only when every notebook succeeded.
set -uo pipefail
cd "$(dirname "$0")"

profile=smoke only="" device=auto setup=1 publish=0 from_archive=0 pool=() params=() sets=()
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile=${2:?--profile needs a value}; shift 2 ;;
    --only) only=${2:?--only needs a notebook name}; shift 2 ;;
    --device) device=${2:?--device needs a value}; shift 2 ;;
    --workers)
      [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "reproduce.sh: --workers needs a positive number of processes, e.g. --workers $(nproc)" >&2; exit 2; }
      pool=(-p executor process -p workers "$2"); shift 2 ;;
    --set)
      [[ "${2:-}" =~ ^[A-Za-z_][A-Za-z0-9_]*=. ]] || { echo "reproduce.sh: --set needs NAME=VALUE (a notebook parameter and its YAML value), e.g. --set 'columns=[FashionMNIST]'" >&2; exit 2; }
      params+=(-y "${2%%=*}: ${2#*=}"); sets+=("$2"); shift 2 ;;
    --publish) publish=1; shift ;;
    --from-archive) from_archive=1; shift ;;
    --no-setup) setup=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "reproduce.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$profile" in
  smoke|quick|paper) ;;
  *) echo "reproduce.sh: --profile must be smoke, quick or paper (got '$profile')" >&2; exit 2 ;;
esac

if [ "$publish" = 1 ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  echo "reproduce.sh: --publish needs a tree without uncommitted changes (git status): commit them first, or run without --publish" >&2
  exit 2
fi
start_all=$(date +%s)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && commit="$commit (with uncommitted changes)"
if [ "$setup" = 1 ]; then
  bash scripts/setup.sh || { echo "reproduce.sh: setup failed (scripts/setup.sh); nothing was run" >&2; exit 1; }
fi

reports="reports/$profile"
mkdir -p "$reports" "results/$profile"
if [ "$from_archive" = 1 ]; then
  shopt -s nullglob
  archives=(published/"$profile"/runs/*.tar.xz published/"$profile"/runs/chunks/*.tar.xz)  # pages, campaign chunks
  shopt -u nullglob
  [ ${#archives[@]} -gt 0 ] || { echo "reproduce.sh: --from-archive: no archive under published/$profile/runs/" >&2; exit 2; }
  .venv/bin/python -m fairfl_core.cli archive unpack --profile "$profile" "${archives[@]}" \
    || { echo "reproduce.sh: --from-archive: could not unpack the archives; nothing was run" >&2; exit 1; }
  export FAIRFL_FROM_ARCHIVE=1
fi
declare -A paper_of  # each registered page (fairfl_core/papers/) and the paper whose claims it counts
pages=$(.venv/bin/python -m fairfl_core.papers) \
  || { echo "reproduce.sh: could not list the registered pages (python -m fairfl_core.papers); nothing was run" >&2; exit 1; }
while IFS=$'\t' read -r page paper; do paper_of[$page]=$paper; done <<< "$pages"
ran=() failed=()
for notebook in notebooks/*.ipynb; do
  [ -e "$notebook" ] || continue
  file=$(basename "$notebook" .ipynb)
  name=${file#[0-9][0-9]_}
  if [ -n "$only" ] && [ "$only" != "$name" ] && [ "$only" != "$file" ]; then
    continue
  fi
  if [ -z "${paper_of[$name]+registered}" ]; then
    echo "reproduce.sh: notebook $file is no registered page: register a bundle named '$name' in fairfl_core/papers/ (docs/extending.md)" >&2
    failed+=("$name")
    continue
  fi
  out="$reports/$name"
  nb_params=("${params[@]}") nb_sets=("${sets[@]}")
  if [ "$from_archive" = 1 ] && [ ${#sets[@]} -eq 0 ] && [ -f "published/$profile/$name/status.json" ]; then
    # rebuild the page with the parameters it was published with (its status.json)
    while IFS= read -r set; do
      [ -n "$set" ] && nb_params+=(-y "${set%%=*}: ${set#*=}") && nb_sets+=("$set")
    done < <(.venv/bin/python -c 'import sys; from fairfl_core.report.publish import page_sets
print(*page_sets(sys.argv[1]), sep="\n")' "published/$profile/$name")
  fi
  rm -rf "$out"  # the folder holds only what this run writes: a table an earlier run wrote is not published
  mkdir -p "$out"
  echo "reproduce.sh: [$profile] $file -> $out/"
  start=$(date +%s)
  if FAIRFL_RUN_LEDGER="$PWD/$out/runs.jsonl" .venv/bin/papermill "$notebook" "$out/$file.ipynb" --cwd notebooks -k python3 \
      -p profile "$profile" -p results_dir "../results/$profile" -p output_dir "../$out" -p device "$device" "${pool[@]}" "${nb_params[@]}" \
      >"$out/papermill.log" 2>&1; then
    status=ok
  else
    status=failed
    failed+=("$name")
    echo "reproduce.sh: notebook $file FAILED; see $out/papermill.log and $out/$file.html" >&2
    tail -n 5 "$out/papermill.log" >&2
  fi
  seconds=$(( $(date +%s) - start ))
  if [ -f "$out/$file.ipynb" ]; then
    .venv/bin/jupyter nbconvert --to html --log-level ERROR "$out/$file.ipynb" --output-dir "$out" \
      || echo "reproduce.sh: could not convert $out/$file.ipynb to HTML" >&2
  fi
  set_json=$(printf '%s' "${nb_sets[*]-}" | sed 's/\\/\\\\/g; s/"/\\"/g')
  sets_json=$(.venv/bin/python -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "${nb_sets[@]}")
  printf '{"status": "%s", "seconds": %d, "profile": "%s", "commit": "%s", "set": "%s", "sets": %s, "paper": "%s"}\n' \
    "$status" "$seconds" "$profile" "$commit" "$set_json" "$sets_json" "${paper_of[$name]}" >"$out/status.json"
  echo "reproduce.sh: $file $status in ${seconds}s"
  ran+=("$name")
done

if [ ${#ran[@]} -eq 0 ] && [ ${#failed[@]} -eq 0 ]; then
  echo "reproduce.sh: no notebook matched --only '$only'; notebooks: $(ls notebooks/*.ipynb 2>/dev/null | xargs -n1 basename 2>/dev/null | tr '\n' ' ')" >&2
  exit 2
fi
.venv/bin/python -m fairfl_core.report.index "$reports" >/dev/null || failed+=("index.html")
if [ "$publish" = 1 ]; then
  .venv/bin/python -m fairfl_core.report.publish "$reports" "published/$profile" "results/$profile" \
    --only "${ran[@]}" || failed+=("publish")
fi
echo "reproduce.sh: ${#ran[@]} notebook(s) in $(( $(date +%s) - start_all ))s; index: $reports/index.html"
if [ ${#failed[@]} -gt 0 ]; then
  echo "reproduce.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "reproduce.sh: all notebooks succeeded"
