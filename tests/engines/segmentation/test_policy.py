"""The PPO policy of the GrabS agent: its moves, its advantage estimates, its update, training and use."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from engines.core import EngineError
from engines.segmentation.agent import MOVES, AgentParams, moved
from engines.segmentation.example import example_cloud
from engines.segmentation.objectness import RewardParams
from engines.segmentation.api import SegmentParams, method_params, segment
from engines.segmentation.policy import (
    PolicyConfig, PolicyTrainParams, _advantages, _net, _ppo_update, load_policy, run_policy_agent, shipped_policy_path,
    train_policy,
)
from engines.segmentation.prior import load_prior


def test_moves_stay_within_grabs_limits() -> None:
    p = AgentParams()
    anchor = np.zeros(3)
    assert moved((0.0, 0.0, 1.5), "grow", anchor, p) is None
    assert moved((0.0, 0.0, 1.5), "shrink", anchor, p)[2] == pytest.approx(1.125)
    assert moved((0.0, 0.0, 0.16), "shrink", anchor, p) is None
    assert moved((0.0, 0.0, 1.0), "-y", anchor, p) == pytest.approx((0.0, -0.3, 1.0))
    assert moved((1.9, 0.0, 1.0), "+x", anchor, p) is None, "the cylinder stays within reach of its anchor"


def test_advantages_are_discounted_returns_minus_values() -> None:
    ep = {"rewards": [-1.0, 10.0], "values": [2.0, 4.0]}
    adv, ret = _advantages([ep], gamma=0.5, lam=1.0)
    # returns: 10 at the last step, -1 + 0.5 * 10 = 4 at the first
    assert ret == pytest.approx([4.0, 10.0]) and adv == pytest.approx([2.0, 6.0])
    adv, _ = _advantages([ep], gamma=1.0, lam=0.0)  # one-step TD errors
    assert adv == pytest.approx([-1.0 + 4.0 - 2.0, 10.0 - 4.0])


def test_ppo_update_favours_the_rewarded_action() -> None:
    torch.manual_seed(0)
    config = PolicyConfig(latent=4, hidden=16)
    net = _net(config)
    obs = np.random.default_rng(0).normal(size=(64, config.observation)).astype(np.float32)
    allowed = np.ones(len(MOVES), bool)
    eps = [{"obs": [o], "allowed": [allowed], "actions": [k % 2], "logp": [float(np.log(1 / len(MOVES)))], "values": [0.0],
            "rewards": [10.0 if k % 2 == 0 else -1.0]} for k, o in enumerate(obs)]
    x = torch.from_numpy(obs)
    mask = torch.ones(len(obs), len(MOVES), dtype=torch.bool)
    before = torch.softmax(net(x, mask)[0], dim=1)[:, 0].mean()
    _ppo_update(net, torch.optim.Adam(net.parameters(), lr=1e-2), eps, PolicyTrainParams(minibatch=32), torch.Generator().manual_seed(0))
    after = torch.softmax(net(x, mask)[0], dim=1)
    assert after[:, 0].mean() > before + 0.05 and after[:, 0].mean() > after[:, 1].mean()
    masked = mask.clone()
    masked[:, 0] = False
    assert torch.softmax(net(x, masked)[0], dim=1)[:, 0].max() < 1e-6, "disallowed actions get no probability"


def test_training_writes_a_policy_that_loads(tmp_path: Path) -> None:
    out = tmp_path / "policy.pt"
    result = train_policy(out, PolicyTrainParams(minutes=0.02, rooms=1, held_out=1, episodes=8))
    assert out.exists() and result["iterations"] >= 1 and result["rooms_seen"] >= 1
    for key in ("held_out_found", "held_out_found_before", "held_out_found_by_search"):
        assert 0.0 <= result[key] <= 1.0
    net = load_policy(out)
    assert net.config == PolicyConfig(latent=load_prior().config.latent)
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(EngineError, match="not a segmentation policy"):
        load_policy(bad)
    with pytest.raises(EngineError, match="not found"):
        load_policy(tmp_path / "missing.pt")
    with pytest.raises(EngineError):
        PolicyTrainParams(minutes=0)


def test_shipped_policy_moves_cylinders_by_the_rules() -> None:
    cloud = example_cloud()
    pts = cloud.points.astype(np.float64)
    anchors = pts[np.random.default_rng(0).choice(len(pts), 5, replace=False)]
    p, reward = AgentParams(), RewardParams()
    trajs, seen = run_policy_agent(load_policy(shipped_policy_path()), load_prior(), pts, float(pts[:, 2].min()), anchors, p, reward,
                                   np.random.default_rng(0))
    assert len(trajs) == 5 and seen
    for t, a in zip(trajs, anchors):
        assert t.steps[0].action == "start" and t.steps[0].radius == pytest.approx(p.start_radius)
        assert len([s for s in t.steps if s.action in MOVES]) <= p.max_steps
        for s in t.steps:
            assert s.action in MOVES + ("start", "stop")
            assert p.min_radius - 1e-9 <= s.radius <= p.max_radius + 1e-9
            assert np.hypot(s.x - a[0], s.y - a[1]) <= p.anchor_range + 1e-9
        if t.found:
            assert t.steps[-1].action == "stop" and t.steps[-1].distance <= reward.found_threshold


def test_pipeline_with_the_ppo_policy() -> None:
    params = method_params(SegmentParams(agent=AgentParams(anchors=6)), "grabs_ppo")
    assert params.method == "grabs" and params.agent.policy == "ppo"
    result = segment(example_cloud(), params)
    assert result.agent == "ppo" and result.segments and result.summary()["agent"] == "ppo"
    assert len(result.trajectories) >= 6
    with pytest.raises(EngineError, match="policy"):
        replace(params.agent, policy="random")


def test_a_cancelled_policy_agent_stops() -> None:
    from engines.core import CancelToken, Cancelled

    pts = example_cloud().points.astype(np.float64)
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        run_policy_agent(load_policy(), load_prior(), pts, float(pts[:, 2].min()), pts[:3], AgentParams(), RewardParams(),
                         np.random.default_rng(0), cancel=token)
