"""Runs as rows: the local training of many concurrent runs as one stacked computation.

R runs of one experiment (seeds × methods × hyperparameter values) each keep their own algorithm, engine,
store and checkpoints, and run in their own thread (the ``rows`` executor of ``experiments/sweep.py``).
Their engines train through a :class:`RowsTrainer` (``Engine.use_trainer``), whose calls come here (``train``
and ``train_pooled``; ``stack`` is the engine's own): a run that asks for local training waits until every
live run is waiting or done, and the pending calls are then executed together. Calls that can share a stack
do: their clients become rows of one :class:`~fairfl_core.sim.client_stack.ClientStack`, each with its own
starting point, minibatch schedule, running statistics and step terms. A row's numbers do not depend on the
other rows of its stack, so each run gets exactly the numbers it gets alone. Models that draw dropout masks
from torch's generator (other than ``SeededDropout``) never share a stack.

Experimental until a GPU measurement shows it pays (on CPUs 0.96–1.04× of the process pool; never measured on
a GPU). Stacking is for GPUs, where one run's step is a few dozen small kernel launches and R runs' rows give
each launch R times the work. On CPUs the batched GEMMs of one run's clients already run near the matmul peak,
and a larger stack is slower per row (``benchmarks/README.md``), so by default (``stack=None``) calls on a CPU
train one after the other, each as it would alone; ``stack=True`` stacks them there too (the tests do, to
check the numbers).

One module per concern, each readable alone:

* ``meeting.py``: the run threads' meeting (:class:`RowsBatcher`, :class:`RowsTrainer`, :class:`RunDied`);
* ``stacking.py``: stacks or alone, decided once per call, and each group's training;
* ``merge.py``: the pure merge of calls into one stack's call (:func:`merge_specs`, :class:`RowTerms`,
  :func:`concat_schedules`, :func:`spec_key`) and its result split back;
* ``memory.py``: one copy of each sample pool (:class:`PoolRegistry`) and the memory budget of a stack's
  chunks (:func:`memory_budget`, :func:`row_bytes`, :func:`activation_elements`).
"""

from fairfl_core.sim.rows.meeting import RowsBatcher, RowsTrainer, RunDied
from fairfl_core.sim.rows.memory import PoolRegistry, activation_elements, memory_budget, row_bytes
from fairfl_core.sim.rows.merge import RowTerms, concat_schedules, merge_specs, spec_key

__all__ = [
    "PoolRegistry",
    "RowTerms",
    "RowsBatcher",
    "RowsTrainer",
    "RunDied",
    "activation_elements",
    "concat_schedules",
    "memory_budget",
    "merge_specs",
    "row_bytes",
    "spec_key",
]
