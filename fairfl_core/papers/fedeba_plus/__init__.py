"""FedEBA+ (Wang, Wang, Shi, Karimireddy & Tang, "Entropy-driven Fair and Effective Federated Learning"):
Tables 1, 3, 15, 16, Figs. 1, 9, 14 (``experiments.py``, ``claims.py``, ``figure1.py``) and the appendix's
Tables 9–11, 13 (``appendix_experiments.py``, ``appendix.py``, its own bundle)."""

TITLE = "FedEBA+"  # the paper's name in the main number (report.headline)
METHODS = ("fedeba", "fedeba+", "prac_fedeba+")

__all__ = ["METHODS", "TITLE"]
