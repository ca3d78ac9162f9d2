"""The quickstart experiment: FedAvg vs FedProx on the FedEBA+ Fashion-MNIST workload."""

from fairfl_core.experiments.profiles import Experiment, Method, PaperTable, Profile, register_experiment

register_experiment(
    Experiment(
        name="quickstart",
        description="FedAvg vs FedProx (mu=0.01) on the FedEBA+ Fashion-MNIST workload: 100 clients with 2 "
        "label-sorted shards each, MLP, 10 clients per round, K=10 local steps (FedEBA+ Table 1 setup).",
        config="fmnist_baselines_sweep.yaml",
        methods=(
            Method("FedAvg", "fedavg", paper_row="FedAvg"),
            Method("FedProx (μ=0.01)", "fedprox", {"mu": 0.01}),
        ),
        paper=PaperTable("fedeba_plus", "Table 1", {"fashion_mnist": "FashionMNIST"}),
        profiles={
            "smoke": Profile(
                "CI check: 6 rounds, 2 seeds, all 100 clients; numbers far from converged", 6, (0, 1), 2
            ),
            "quick": Profile(
                "300 of the paper's 2000 rounds, 3 seeds, evaluation every 10 rounds", 300, (0, 1, 2), 10
            ),
            "paper": Profile(
                "paper scale: 2000 rounds, 5 seeds, evaluation every 20 rounds (FedEBA+ Table 1)",
                2000,
                (0, 1, 2, 3, 4),
                20,
            ),
        },
    )
)
