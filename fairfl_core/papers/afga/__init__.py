"""AFGA and CAFGA ("On the Data Heterogeneity in Adaptive Federated Learning", TMLR 2024): Tables 1–8 and
Figures 1, 2, 6 (§6, App. B)."""

TITLE = "AFGA / CAFGA"  # the paper's name in the main number (report.headline)
METHODS = ("afga", "cafga")

__all__ = ["METHODS", "TITLE"]
