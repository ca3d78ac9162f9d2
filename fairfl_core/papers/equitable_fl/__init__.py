"""Equitable-FL ("Equitable Federated Learning with Activation Clustering"): Tables 2–5 and Figures 2–6
(§5)."""

METHODS = ("equitable_fl",)

__all__ = ["METHODS"]
