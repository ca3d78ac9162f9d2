"""AFGA and CAFGA ("On the Data Heterogeneity in Adaptive Federated Learning", TMLR 2024): Tables 1–8 and
Figures 1, 2, 6 (§6, App. B)."""

METHODS = ("afga", "cafga")

__all__ = ["METHODS"]
