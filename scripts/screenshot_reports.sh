#!/usr/bin/env bash
# Render reports/<profile>/index.html in headless Chromium and save screenshots to look at.
#
#   scripts/screenshot_reports.sh [PROFILE] [OUT_DIR]
#
#   PROFILE  smoke | quick | paper (default: smoke): the reports of ./reproduce.sh --profile PROFILE
#   OUT_DIR  where the PNGs go (default: reports/screenshots/PROFILE)
#   WIDTH    environment: browser window width in pixels (default 1280); TILE: tile height (default 2400)
#
# Rebuilds the index from the files under reports/PROFILE, screenshots the whole page (the window grows until
# the page fits) and writes it as index.png plus index-01.png, index-02.png, ... (TILE pixels high each) to
# read one screen at a time. Needs Debian's chromium (apt-get install chromium), chromium-browser or
# google-chrome on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=${1:-smoke}
reports="reports/$profile"
out=${2:-reports/screenshots/$profile}
if [ ! -d "$reports" ]; then
  echo "screenshot_reports.sh: $reports does not exist; run ./reproduce.sh --profile $profile first" >&2
  exit 2
fi
browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null; then browser=$b; break; fi
done
[ -n "$browser" ] || { echo "screenshot_reports.sh: no Chromium on PATH; install it: apt-get install chromium" >&2; exit 2; }
python=.venv/bin/python
[ -x "$python" ] || python=python3

"$python" -m fairfl_core.report.index "$reports" >/dev/null
mkdir -p "$out"
out=$(realpath "$out")
rm -f "$out"/index.png "$out"/index-[0-9][0-9].png
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
page="file://$(realpath "$reports/index.html")"

height=16000
while :; do
  rm -rf "$tmp/profile"
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$tmp/profile" \
    --window-size="${WIDTH:-1280},$height" --screenshot="$tmp/page.png" "$page" >/dev/null 2>&1 || true
  [ -s "$tmp/page.png" ] || { echo "screenshot_reports.sh: $browser wrote no screenshot of $page" >&2; exit 1; }
  # the page fits when the bottom 200 pixel rows are blank; then cut away the blank tail and tile
  rc=0
  "$python" - "$tmp/page.png" "$out" "${TILE:-2400}" <<'EOF' || rc=$?
import sys

import numpy as np
from PIL import Image

page, out, tile = Image.open(sys.argv[1]).convert("RGB"), sys.argv[2], int(sys.argv[3])
ink = np.flatnonzero((np.asarray(page.convert("L")) < 250).any(axis=1))
if len(ink) and ink[-1] >= page.height - 200:
    sys.exit(3)  # the page goes on below the window
page = page.crop((0, 0, page.width, (ink[-1] if len(ink) else 0) + 40))
page.save(f"{out}/index.png")
for i, top in enumerate(range(0, page.height, tile), start=1):
    page.crop((0, top, page.width, min(top + tile, page.height))).save(f"{out}/index-{i:02d}.png")
print(f"{out}/index.png: {page.width} x {page.height} px, {i} tile(s) index-01.png ... index-{i:02d}.png")
EOF
  [ "$rc" = 0 ] && break
  [ "$rc" = 3 ] || { echo "screenshot_reports.sh: could not cut $tmp/page.png into tiles" >&2; exit 1; }
  if [ "$height" -ge 64000 ]; then
    echo "screenshot_reports.sh: the page is taller than 64000 px; only its top was captured" >&2
    cp "$tmp/page.png" "$out/index.png"
    exit 1
  fi
  height=$((height * 2))
done
