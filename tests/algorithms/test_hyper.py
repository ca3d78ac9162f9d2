"""Every algorithm's options are ``Literal`` fields, checked in one place (``dataclass_io``) as a config is
read, when a ``Hyper`` is built directly and as a pure function's argument (``check_option``); the option
tables keyed by name list exactly their options."""

import dataclasses
import typing

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import ALGORITHMS, build_algorithm
from fairfl_core.algorithms.aaggff import CDFS, Cdf, aaggff_gradient
from fairfl_core.algorithms.fedeba import TAU_SCHEDULES, TauSchedule, annealed_tau
from fairfl_core.algorithms.fedmgda import box_centre
from fairfl_core.algorithms.fedopt import amsgrad_server_step
from fairfl_core.algorithms.gifair_global import INIT_LOSSES, LOSS_SOURCES, InitLosses, LossSource, group_ids
from fairfl_core.algorithms.qffl import QFFLHyper
from fairfl_core.selection.activation_clustering import REDUCTIONS, Reduction
from fairfl_core.selection.clustered import MEASURES, Measure
from fairfl_core.selection.submodular import OBJECTIVE_SCALES, PHI, ObjectiveScale, Phi
from tests.algorithms.conftest import tiny_sim


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_no_hyper_field_is_a_free_string(name):
    hyper = ALGORITHMS[name].Hyper
    hints = {name: (hint, *typing.get_args(hint)) for name, hint in typing.get_type_hints(hyper).items()}
    free = [f.name for f in dataclasses.fields(hyper) if str in hints[f.name]]
    assert not free, f"{hyper.__name__}: {free} are str; an option is a Literal (dataclass_io checks it)"


@pytest.mark.parametrize(
    "table,options",
    [
        (CDFS, Cdf),
        (TAU_SCHEDULES, TauSchedule),
        (LOSS_SOURCES, LossSource),
        (INIT_LOSSES, InitLosses),
        (PHI, Phi),
        (OBJECTIVE_SCALES, ObjectiveScale),
        (MEASURES, Measure),
        (REDUCTIONS, Reduction),
    ],
)
def test_an_option_table_lists_its_literals_options(table, options):
    assert tuple(table) == typing.get_args(options)


def test_a_redefined_option_keeps_its_check_on_both_paths():
    # q-FFL redefines Averaging's weighting (default "uniform"): still a Literal, checked by dataclass_io
    message = r"must be one of \('size', 'uniform'\), got 'equal'"
    with pytest.raises(ValueError, match=r"^algorithm 'qffl'\.weighting " + message):
        build_algorithm("qffl", tiny_sim(), {"weighting": "equal"})
    with pytest.raises(ValueError, match=r"^QFFLHyper\.weighting " + message):
        QFFLHyper(weighting="equal")


def test_an_algorithm_builds_the_hyper_it_is_generic_in():
    from fairfl_core.algorithms.base import FederatedAlgorithm
    from fairfl_core.algorithms.fedavg import FedAvg
    from fairfl_core.algorithms.hyper import FedAvgHyper

    @dataclasses.dataclass
    class ToyHyper(FedAvgHyper):
        gain: float = 2.0

    class Toy(FedAvg[ToyHyper]):
        pass

    class Child(Toy):  # no type argument of its own: the parent's Hyper
        pass

    assert Toy.Hyper is ToyHyper and Child.Hyper is ToyHyper and FedAvg.Hyper is FedAvgHyper
    assert ALGORITHMS["fedeba+"].Hyper.__name__ == "FedEBAPlusHyper"
    with pytest.raises(TypeError, match="Hyper = QFFLHyper but the class is generic in ToyHyper"):

        class Contradiction(FederatedAlgorithm[ToyHyper]):
            Hyper = QFFLHyper


ONE = torch.ones(2)


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: annealed_tau(1.0, 0, "cubic"), "tau schedule must be one of ('constant', 'linear', "),
        (lambda: box_centre("median", np.ones(2)), "box_centre must be one of ('uniform', 'weights'), got"),
        (
            lambda: group_ids(np.zeros(2), "pairs"),
            "groups must be one of ('auto', 'partition', 'individual', ",
        ),
        (lambda: group_ids(np.zeros(2), "sensitive"), "groups='sensitive' is sensitive_group_ids"),
        (
            lambda: amsgrad_server_step(
                ONE, ONE, ONE, ONE, ONE, lr=1, beta1=0, beta2=0, tau=1, variant="adam"
            ),
            "variant must be one of ('amsgrad', 'max_stabilization'), got 'adam'",
        ),
        (lambda: aaggff_gradient(ONE, ONE, np.arange(2), 1.0, "robust"), "dr_estimate must be one of"),
    ],
)
def test_a_pure_functions_option_argument_is_refused_in_one_line(call, message):
    with pytest.raises(ValueError) as refused:
        call()
    assert message in str(refused.value) and "\n" not in str(refused.value)
