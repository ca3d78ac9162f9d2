import dataclasses

import pytest

from fairfl_core.experiments.config import ExperimentConfig, apply_overrides, config_hash
from tests.experiments.conftest import digits_config


def test_roundtrip_and_overrides():
    cfg = digits_config()
    again = ExperimentConfig.from_dict(cfg.to_dict())
    assert again == cfg
    d = apply_overrides(cfg.to_dict(), ["algorithm.params.mu=0.5", "train.lr=1e-2", "algorithm.name=fedprox"])
    new = ExperimentConfig.from_dict(d).validate()
    assert new.algorithm.params == {"mu": 0.5} and new.train.lr == 0.01


def test_hash_is_identity_of_the_numbers_only():
    cfg = digits_config()
    moved = ExperimentConfig.from_dict(apply_overrides(cfg.to_dict(), ["engine.device=cuda", "name=other"]))
    changed = ExperimentConfig.from_dict(apply_overrides(cfg.to_dict(), ["train.lr=0.2"]))
    assert config_hash(moved) == config_hash(cfg) != config_hash(changed)


def test_a_field_added_later_keeps_existing_hashes_at_its_default():
    cfg = digits_config()
    assert cfg.data.val_frac == 0.0
    assert config_hash(cfg) == "29452d984095dc3b"  # computed before data.val_frac existed
    held_out = ExperimentConfig.from_dict(apply_overrides(cfg.to_dict(), ["data.val_frac=0.1"]))
    assert config_hash(held_out) != config_hash(cfg)
    looped = ExperimentConfig.from_dict(apply_overrides(cfg.to_dict(), ["engine.client_axis=loop"]))
    assert config_hash(looped) == config_hash(cfg)  # how clients are mapped is not the run's identity
    exact = ExperimentConfig.from_dict(apply_overrides(cfg.to_dict(), ["engine.precision=exact"]))
    assert config_hash(exact) == config_hash(cfg)  # exact is the arithmetic of every run before the field
    fast = ExperimentConfig.from_dict(apply_overrides(cfg.to_dict(), ["engine.precision=bf16"]))
    assert config_hash(fast) != config_hash(cfg)  # a fast mode changes the numbers: another run


@pytest.mark.parametrize(
    "override,message",
    [
        ("train.lr=-1", "train.lr"),
        ("train.local_epochs=2", "exactly one of them"),
        ("engine.kind=warp", r"'engine'\.kind must be one of \('batched', 'sequential'\), got 'warp'"),
        ("engine.client_axis=threads", r"'engine'\.client_axis must be one of \('auto', 'vmap', "),
        ("engine.precision=fp8", r"'engine'\.precision must be one of \('exact', 'tf32', 'bf16'\)"),
        ("engine.precision=tf32\x00engine.dtype=float64", "TF32 and bf16 speed up float32 kernels"),
        ("model.name=gpt", "model.name"),
        ("algorithm.name=nope", "unknown algorithm 'nope'"),
    ],
)
def test_validation_names_the_field(override, message):
    d = apply_overrides(digits_config().to_dict(), override.split("\x00"))
    with pytest.raises(ValueError, match=message):
        ExperimentConfig.from_dict(d).validate()


def test_unknown_fields_are_named_with_the_valid_ones():
    with pytest.raises(ValueError, match=r"config section 'train': unknown field\(s\) \['lrr'\]"):
        ExperimentConfig.from_dict({"train": {"lrr": 0.1}})
    with pytest.raises(ValueError, match="must look like"):
        apply_overrides({}, ["train.lr"])


def test_validate_checks_the_options_of_sections_built_directly():
    cfg = digits_config()
    cfg.engine = dataclasses.replace(cfg.engine, precision="fp8")
    with pytest.raises(
        ValueError, match=r"^EngineConfig\.precision must be one of \('exact', 'tf32', 'bf16'\)"
    ):
        cfg.validate()
