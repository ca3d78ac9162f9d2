"""Equitable-FL ("Equitable Federated Learning with Activation Clustering"): Tables 2–5 and Figures 2–6
(§5)."""

TITLE = "Equitable-FL"  # the paper's name in the main number (report.headline)
METHODS = ("equitable_fl",)

__all__ = ["METHODS", "TITLE"]
