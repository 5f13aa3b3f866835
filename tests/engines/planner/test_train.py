"""Training-set sampling and loss weights: which expert samples count as hard braking, how the
plan's first seconds and a stopping plan's far waypoints are weighed, impossible settings, and
fine-tuning from a checkpoint."""
from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from engines.core import EngineError
from engines.planner import features as F
from engines.planner.data import generate_dataset
from engines.planner.features import FUTURE_DT, FUTURE_STEPS
from engines.planner.diffusion import diffusion_loss
from engines.planner.model import DiffusionPlannerNet, ModelConfig
from engines.planner.planners.diffusion_planner import default_checkpoint, load_model
from engines.planner.train import (EARLY_S, TRAVEL_FLOOR, TrainParams, early_weights, hard_braking, load_dataset, repeat_scenes, scene_denoiser,
                                   state_statistics, train, travel_weights)


def _ego_futures(speeds: list[list[float]]) -> dict[str, torch.Tensor]:
    """Ego futures driving straight at the given speed per waypoint interval (m/s)."""
    n, t1 = len(speeds), FUTURE_STEPS + 1
    future = torch.zeros(n, 2, t1, 4)
    for i, profile in enumerate(speeds):
        v = torch.tensor(profile + [profile[-1]] * (t1 - 1 - len(profile)))
        future[i, 0, 1:, 0] = torch.cumsum(v * FUTURE_DT, 0)
    return {"future": future, "future_valid": torch.ones(n, 2, t1, dtype=torch.bool)}


def test_hard_braking_is_a_drop_of_more_than_2_m_s2_within_2_s() -> None:
    cruise = [10.0] * 12
    gentle = [10.0 - 0.3 * k for k in range(12)]  # 1.5 m/s^2
    hard = [10.0, 10.0, 9.0, 8.0, 7.0]  # 5 m/s^2 from 0.4 s on
    late = [10.0] * 12 + [9.0, 8.0]  # hard, but after 2 s
    data = _ego_futures([cruise, gentle, hard, late])
    assert hard_braking(data).tolist() == [False, False, True, False]
    data["future_valid"][2, 0, 3:] = False  # a label that ends early is not counted
    assert hard_braking(data).tolist() == [False, False, False, False]


def test_the_braking_weight_must_be_positive() -> None:
    with pytest.raises(EngineError, match="brake-weight"):
        TrainParams(brake_weight=0.0)


def test_the_plans_first_seconds_weigh_more_and_the_mean_weight_stays_one() -> None:
    assert early_weights(FUTURE_STEPS, 1.0) is None
    w = early_weights(FUTURE_STEPS, 4.0)
    early = int(round(EARLY_S / FUTURE_DT))
    assert w.shape == (FUTURE_STEPS,) and torch.isclose(w.mean(), torch.tensor(1.0))
    assert torch.allclose(w[:early], w[0]) and torch.allclose(w[early:], w[-1])
    assert torch.isclose(w[0] / w[-1], torch.tensor(4.0))


def test_the_ego_loss_counts_an_early_error_by_its_weight() -> None:
    x0 = torch.zeros(1, 2, FUTURE_STEPS + 1, 4)
    valid = torch.ones(1, 2, FUTURE_STEPS + 1, dtype=torch.bool)
    early_miss = x0.clone()
    early_miss[0, 0, 1, 0] = 1.0  # one unit off at the first waypoint
    late_miss = x0.clone()
    late_miss[0, 0, -1, 0] = 1.0  # one unit off at the last one
    w = early_weights(FUTURE_STEPS, 4.0)
    _, plain, _ = diffusion_loss(lambda x_t, t: early_miss, x0, valid)
    _, early, _ = diffusion_loss(lambda x_t, t: early_miss, x0, valid, w)
    _, late, _ = diffusion_loss(lambda x_t, t: late_miss, x0, valid, w)
    assert torch.isclose(plain, torch.tensor(1.0 / FUTURE_STEPS))
    assert torch.isclose(early, w[0] / FUTURE_STEPS) and torch.isclose(late, w[-1] / FUTURE_STEPS)


def test_the_ego_loss_teaches_only_the_logged_part_of_a_plan() -> None:
    x0 = torch.zeros(1, 2, FUTURE_STEPS + 1, 4)
    valid = torch.ones(1, 2, FUTURE_STEPS + 1, dtype=torch.bool)
    late_miss = x0.clone()
    late_miss[0, 0, -1, 0] = 3.0  # off where the recording had already ended
    early_miss = x0.clone()
    early_miss[0, 0, 1, 0] = 1.0
    logged = torch.zeros(1, FUTURE_STEPS + 1, dtype=torch.bool)
    logged[0, :11] = True  # 2 s of log
    _, tail, _ = diffusion_loss(lambda x_t, t: late_miss, x0, valid, ego_mask=logged)
    _, head, _ = diffusion_loss(lambda x_t, t: early_miss, x0, valid, ego_mask=logged)
    assert tail == 0.0 and torch.isclose(head, torch.tensor(1.0 / 10))
    seen = []
    diffusion_loss(lambda x_t, t: seen.append(x_t) or x0, x0 + 1.0, valid, ego_mask=logged)
    assert (seen[0][0, 0, 11:] != 0).all()  # the network is shown the untaught tail, not zeros


def test_the_early_weight_must_be_positive() -> None:
    with pytest.raises(EngineError, match="early-weight"):
        TrainParams(early_weight=-1.0)


def test_a_stopping_plans_far_waypoints_weigh_up_to_the_cap_and_a_cruising_plans_stay_at_one() -> None:
    std = torch.tensor([4.0, 17.0, 35.0])  # the along-track spread at 1, 4 and 8 s
    stopping = torch.tensor([1.0, 1.4, 1.5])  # m travelled by then: the expert stops within 1.5 m
    rolling = torch.tensor([3.0, 10.0, 17.5])
    cruise = torch.tensor([12.0, 48.0, 96.0])
    assert travel_weights(stopping[None], std, 1.0) is None
    w = travel_weights(torch.stack([stopping, rolling, cruise]), std, 16.0)
    assert torch.allclose(w[0], torch.tensor([1.0, (17.0 / TRAVEL_FLOOR) ** 2, 16.0]))  # under the floor: counted as 5 m
    assert torch.allclose(w[1], torch.tensor([1.0, (17.0 / 10.0) ** 2, 4.0]))
    assert torch.equal(w[2], torch.ones(3))


def test_the_slow_weight_must_be_at_least_one() -> None:
    with pytest.raises(EngineError, match="slow-weight"):
        TrainParams(slow_weight=0.5)


def _random_scenes(b: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    sizes = {"agents": (F.N_AGENTS, F.AGENT_DIM), "statics": (F.N_STATIC, F.STATIC_DIM), "lanes": (F.N_LANES, F.LANE_DIM),
             "route": (F.N_ROUTE, F.ROUTE_DIM)}
    x = {}
    for name, (n, dim) in sizes.items():
        x[name] = torch.randn(b, n, dim, generator=gen)
        x[f"{name}_mask"] = torch.rand(b, n, generator=gen) < 0.6
    x["ego"] = torch.rand(b, F.EGO_DIM, generator=gen)
    return x


def test_several_noise_draws_per_scene_predict_what_encoding_each_copy_would() -> None:
    gen = torch.Generator().manual_seed(0)
    model = DiffusionPlannerNet(ModelConfig(dim=32, heads=2, encoder_layers=1, decoder_layers=1)).eval()
    with torch.no_grad():  # random weights everywhere: a fresh DiT's zero-initialised gates would ignore the scene
        for param in model.parameters():
            param.normal_(0.0, 0.3, generator=gen)
    scenes, draws = 2, 3
    x = _random_scenes(scenes, gen)
    p = F.N_NEIGHBORS + 1
    x_t = torch.randn(scenes * draws, p, FUTURE_STEPS + 1, 4, generator=gen)
    t = torch.rand(scenes * draws, generator=gen)
    valid_now = torch.rand(scenes * draws, p, generator=gen) < 0.7
    valid_now[:, 0] = True
    shared = scene_denoiser(model, x, valid_now, draws)(x_t, t)
    copies = {k: v.repeat_interleave(draws, dim=0) for k, v in x.items()}
    each = scene_denoiser(model, copies, valid_now)(x_t, t)
    assert shared.shape == x_t.shape
    # float32 round-off only: outputs reach ~60 with these random weights, and the batched and the
    # per-copy passes add in different orders (2.7e-5 apart with torch 2.13)
    assert torch.allclose(shared, each, rtol=1e-5, atol=1e-4)
    other_scene = scene_denoiser(model, {k: v.flip(0) for k, v in x.items()}, valid_now, draws)(x_t, t)
    assert not torch.allclose(shared, other_scene, atol=1e-3)  # the scene reaches the prediction


def test_repeated_scenes_lie_next_to_each_other_and_none_stays_none() -> None:
    a = torch.tensor([[1.0], [2.0]])
    repeated, nothing = repeat_scenes(3, a, None)
    assert repeated[:, 0].tolist() == [1.0, 1.0, 1.0, 2.0, 2.0, 2.0] and nothing is None
    assert repeat_scenes(1, a)[0] is a


def test_the_noise_draws_must_be_at_least_one() -> None:
    with pytest.raises(EngineError, match="noise-draws"):
        TrainParams(noise_draws=0)


def test_the_learning_rate_must_be_positive() -> None:
    with pytest.raises(EngineError, match="--lr"):
        TrainParams(lr=0.0)


def test_fine_tuning_starts_from_the_checkpoint_and_keeps_its_normalisation(tmp_path: Path) -> None:
    """`planner train --init`: the new run's weights, EMA included, are the checkpoint's, and the
    waypoint normalisation its weights were trained in is not replaced by the new data's."""
    data = tmp_path / "d.npz"
    generate_dataset(data, episodes=1, seed=3)
    shipped, _ = load_model(default_checkpoint())
    out = tmp_path / "tuned.pt"
    params = TrainParams(minutes=1.0, batch=16, init=default_checkpoint(), max_steps=0)
    train([data], out, params)
    state = torch.load(out, map_location="cpu", weights_only=False)
    for key, value in shipped.state_dict().items():
        assert torch.equal(state["model"][key], value) and torch.equal(state["train_model"][key], value), key
    loaded = load_dataset([data])
    fresh = state_statistics(loaded["future"], loaded["future_valid"], shipped.cfg.per_step_norm)
    assert not torch.allclose(fresh["ego_std"], shipped.ego_std)  # one episode's spread is not the training set's
    assert state["meta"]["init"] == default_checkpoint().name

    moved = tmp_path / "moved.pt"
    train([data], moved, replace(params, max_steps=3))
    after = torch.load(moved, map_location="cpu", weights_only=False)["train_model"]
    assert torch.equal(after["ego_std"], shipped.ego_std)
    assert any(not torch.equal(after[k], v) for k, v in shipped.named_parameters())  # it trained
    with pytest.raises(EngineError, match="--init starts a new run"):
        train([data], moved, replace(params, max_steps=3))  # moved.pt holds a run to resume


def test_averaging_fine_tunes_is_their_weighted_mean_and_keeps_the_normalisation(tmp_path: Path) -> None:
    """`planner average`: WiSE-FT / model soups of fine-tunes of one model; other networks, other
    waypoint units and impossible weights are refused."""
    from engines.planner.weight_average import NORMALISATION, average_checkpoints

    shipped = torch.load(default_checkpoint(), map_location="cpu", weights_only=False)
    tuned = copy.deepcopy(shipped)
    for key, value in tuned["model"].items():
        if value.is_floating_point() and key not in NORMALISATION:
            tuned["model"][key] = value.float() + 1.0
    torch.save(tuned, tmp_path / "tuned.pt")
    info = average_checkpoints([default_checkpoint(), tmp_path / "tuned.pt"], tmp_path / "mix.pt", [3.0, 1.0])
    assert [s["weight"] for s in info["averaged"]] == [0.75, 0.25]
    mixed, meta = load_model(tmp_path / "mix.pt")
    for key, value in mixed.state_dict().items():
        expected = shipped["model"][key].float() + (0.0 if key in NORMALISATION else 0.25)
        assert torch.allclose(value, expected, atol=1e-3), key
    assert meta["averaged"][1]["file"] == "tuned.pt"

    other_units = copy.deepcopy(tuned)
    other_units["model"]["ego_std"] = other_units["model"]["ego_std"].float() * 2.0
    torch.save(other_units, tmp_path / "units.pt")
    other_net = copy.deepcopy(tuned)
    other_net["config"] = {**other_net["config"], "decoder_layers": 3}
    torch.save(other_net, tmp_path / "net.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    for paths, weights, needle in (
        ([tmp_path / "units.pt"], None, "at least two"),
        ([tmp_path / "units.pt"] * 2, [1.0], "1 weights for 2 checkpoints"),
        ([tmp_path / "units.pt"] * 2, [1.0, -1.0], "zero or positive"),
        ([default_checkpoint(), tmp_path / "units.pt"], None, "normalise waypoints differently"),
        ([default_checkpoint(), tmp_path / "net.pt"], None, "different networks"),
        ([default_checkpoint(), tmp_path / "junk.pt"], None, "not a planner checkpoint"),
    ):
        with pytest.raises(EngineError, match=needle):
            average_checkpoints(paths, tmp_path / "bad.pt", weights)
    assert not (tmp_path / "bad.pt").exists()
