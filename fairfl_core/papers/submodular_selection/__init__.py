"""SubTrunc and UnionFL (Castillo J., Kaya, Ye, Hashemi, "Submodular Maximization Approaches for Equitable
Client Selection in Federated Learning", arXiv 2408.13683): Tables I–IV and the §V claims."""

TITLE = "SubTrunc / UnionFL"  # the paper's name in the main number (report.headline)
METHODS = ("subtrunc", "unionfl")

__all__ = ["METHODS", "TITLE"]
