"""The client-dropout notebook's bundle: one experiment, no paper table, no claim (no paper implemented here
measures dropout; the notebook shows each method's change against p = 0, ``experiments.dropout_effects``)."""

from __future__ import annotations

from fairfl_core.report.bundle import Paper, register_paper

__all__ = ["BUNDLE"]

BUNDLE = register_paper(Paper("client_dropout", ("client_dropout",)))
