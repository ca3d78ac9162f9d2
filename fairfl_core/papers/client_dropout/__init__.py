"""Client dropout and fairness: FedAvg, q-FFL and FedEBA+ on FedEBA+ Table 1's Fashion-MNIST workload when
selected clients drop out (``sim/faults.py``); a study of the package's, with no paper table."""

METHODS = ()

__all__ = ["METHODS"]
