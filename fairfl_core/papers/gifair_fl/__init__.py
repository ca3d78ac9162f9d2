"""GIFAIR-FL (Yue, Nouiehed & Al Kontar, "GIFAIR-FL: A Framework for Group and Individual Fairness in
Federated Learning"): Tables 2–6 and the λ sweeps of Figures 4–5 (§5)."""

METHODS = ("gifair_global", "gifair_per", "gifair_global_prox")

__all__ = ["METHODS"]
