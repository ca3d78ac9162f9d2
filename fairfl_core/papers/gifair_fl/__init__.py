"""GIFAIR-FL (Yue, Nouiehed & Al Kontar, "GIFAIR-FL: A Framework for Group and Individual Fairness in
Federated Learning"): Tables 2–6 and the λ sweeps of Figures 4–5 (§5)."""

TITLE = "GIFAIR-FL"  # the paper's name in the main number (report.headline)
METHODS = ("gifair_global", "gifair_per", "gifair_global_prox")

__all__ = ["METHODS", "TITLE"]
