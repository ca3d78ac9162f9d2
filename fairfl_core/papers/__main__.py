"""The registered pages, one line each: the bundle's name (its notebook's), a tab, and the paper whose claims
it counts (``Paper.title``; empty for a page of the package's own). ``reproduce.sh`` runs a notebook only as
a registered page and records its paper in the page's ``status.json``, which the main number reads.

    python -m fairfl_core.papers
"""

from fairfl_core.papers import PAPERS

for _name, _paper in PAPERS.items():
    print(f"{_name}\t{_paper.title}")
