"""The quickstart: FedAvg and FedProx on FedEBA+ Table 1's Fashion-MNIST workload, a check of the pipeline
whose claims are the package's observations."""

METHODS = ()

__all__ = ["METHODS"]
