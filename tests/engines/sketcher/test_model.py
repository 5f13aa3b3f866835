"""The edit model: constrained decoding only proposes valid edits, decoding agrees with training,
and training resumes from its checkpoint."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from engines.core import EngineError
from engines.sketcher.data import DataConfig, make_batch, sample_batches, sample_target
from engines.sketcher.decode import ModelProposer
from engines.sketcher.editpath import TrainingPair
from engines.sketcher.edits import count_primitives, random_program
from engines.sketcher.language import parse, to_text
from engines.sketcher.render import render, render_batch
from engines.sketcher.train import TrainParams, build_model, compute_loss, load_checkpoint, to_tensors, train
from engines.sketcher.vocab import rule_of


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return build_model().eval()


def test_every_proposal_is_a_valid_small_edit(model) -> None:
    rng = random.Random(1)
    states = [random_program(rng, rng.randint(1, 8)) for _ in range(6)]
    target = render(random_program(rng, 3))
    proposals = ModelProposer(model, seed=1).propose(target, states, render_batch(states), 6)
    assert len(proposals) == 6 and sum(len(p) for p in proposals) >= 30
    for state, props in zip(states, proposals):
        for prop in props:
            assert 0 <= prop.edit.pos < len(state)
            assert rule_of(prop.edit.replacement[0]) == rule_of(state[prop.edit.pos])
            assert count_primitives(prop.edit.replacement) <= 2
            child = prop.edit.apply(state)
            assert parse(to_text(child)) == child
            assert prop.logprob < 0


def test_decoding_log_probability_matches_teacher_forcing(model) -> None:
    """The incremental (cached) decoder and the training forward pass are the same model."""
    rng = random.Random(2)
    state = random_program(rng, 4)
    target = render(random_program(rng, 3))
    prop = ModelProposer(model, seed=3).propose(target, [state], render_batch([state]), 1)[0][0]
    pair = TrainingPair(target=state, state=state, edit=prop.edit, remaining=1)
    batch = make_batch([pair], target[None])
    t = to_tensors(batch, torch.device("cpu"))
    with torch.no_grad():
        from engines.sketcher.model import prefix_causal_mask

        seq = t["seq"]
        n = seq.shape[1]
        image = model.encoder(t["target"], t["current"])
        h = model.run(model.embed(seq, torch.arange(n)[None], t["pointer"], t["pointed"], image, t["anchors"]), prefix_causal_mask(t["length"], n))
        length = int(t["length"][0])
        ptr = torch.log_softmax(model.pointer_logits(h[:, length], h, torch.arange(n)[None] < length), -1)[0, prop.edit.pos]
        logits = torch.log_softmax(model.head(h) + model.cat_mask[t["category"]], -1)[0]
        labels = t["next_token"][0]
        tokens = sum(float(logits[i, labels[i]]) for i in range(n) if labels[i] >= 0)
    assert float(ptr) + tokens == pytest.approx(prop.logprob, abs=1e-3)


def test_batches_label_the_reverse_path() -> None:
    batch = sample_batches(random.Random(0), 1, 16, DataConfig(sketch_fraction=0.5))[0]
    for i in range(16):
        n = batch.length[i]
        assert batch.pointer_ok[i, batch.pointer_target[i]]  # the labelled node is one of the right ones
        assert batch.pointer[i, n + 1] == batch.pointer_target[i]
        assert (batch.next_token[i] >= 0).sum() >= 2  # at least one token and <end>


def test_targets_follow_the_primitive_weights() -> None:
    rng = random.Random(5)
    weights = (0, 1, 0, 3)  # only 2 and 4 primitives, one in four of them with 2
    counts = [count_primitives(sample_target(rng, weights)) for _ in range(400)]
    assert set(counts) == {2, 4}
    assert 0.17 < counts.count(2) / len(counts) < 0.33
    assert DataConfig(primitive_weights=weights).max_primitives == 4


def test_training_runs_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "model.pt"
    params = TrainParams(minutes=0.04, out=str(out), batch_size=8, validation_size=16)
    first = train(params)
    assert out.is_file() and first.steps >= 1 and first.resumed_from_step == 0
    assert set(first.metrics) >= {"validation_loss", "validation_pointer_accuracy"}
    second = train(params)
    assert second.resumed_from_step == first.steps and second.steps > first.steps
    assert load_checkpoint(out)["step"] == second.steps


def test_foreign_checkpoints_are_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"\x00" * 10)
    with pytest.raises(EngineError, match="cannot be read"):
        load_checkpoint(junk)
    other = tmp_path / "other.pt"
    torch.save({"weights": np.zeros(3)}, other)
    with pytest.raises(EngineError, match="not a sketcher"):
        load_checkpoint(other)
    with pytest.raises(EngineError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt")


def test_loss_is_finite_on_a_batch(model) -> None:
    batch = sample_batches(random.Random(5), 1, 8)[0]
    loss, stats = compute_loss(model, to_tensors(batch, torch.device("cpu")))
    assert torch.isfinite(loss) and 0 <= stats["pointer_accuracy"] <= 1
