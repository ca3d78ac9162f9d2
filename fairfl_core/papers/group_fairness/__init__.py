"""Group fairness across a sensitive attribute on UCI Adult and COMPAS, FairFed's protocol (Ezzeldin et al.,
AAAI 2023): a study of the package's, not a paper's; every claim is an observation."""

METHODS = ("fairfed",)

__all__ = ["METHODS"]
