"""GrabS's learned agent: a small policy over the cylinder actions, trained with PPO on the
prior-only objectness reward (+10 when the prior finds an object, -1 a step).

GrabS trains its agent with PPO; the search in `agent.py` instead scores every successor of a
state (six prior queries a step where the policy needs one). The policy observes what the prior
says of its current cylinder: the prior's latent code of the crop, the objectness distance and
validity, where the mask lies relative to the axis and how large it is, plus the cylinder's own
radius, offset from the anchor and step count. Training rooms are procedural, with their own
seeds; only points and the frozen prior are read, never ground truth.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from engines.core import CancelToken, EngineError, NEVER_CANCELLED, ProgressFn, atomic_path, no_progress

from .agent import FOUND_REWARD, MOVES, STEP_REWARD, AgentParams, CylinderCrops, Step, Trajectory, moved, state_key
from .objectness import CropScore, RewardParams, score_crops

STATE_FEATURES = 4  # radius, offset from the anchor (2), step
CROP_FEATURES = 8  # points, ring share, valid, distance, mask share, mask centre offset (2), mask radius
TRAIN_ROOM_SEED = 3000  # training rooms: 3000 + 10,000 x seed + k (validation rooms use 500+, the benchmark 1000+)
HELD_OUT_OFFSET = 9000  # held-out rooms: the training seeds' block from here on
FORMAT = "workbench-segmentation-policy"  # written since the safe loader; the shipped file predates it


@dataclass(frozen=True)
class PolicyConfig:
    latent: int = 64
    hidden: int = 128

    @property
    def observation(self) -> int:
        return STATE_FEATURES + CROP_FEATURES + self.latent


@dataclass(frozen=True)
class PolicyTrainParams:
    minutes: float = 20.0
    seed: int = 0
    rooms: int = 32  # training rooms held at once (a rolling pool)
    refresh_every: int = 4  # iterations between replacing the oldest room by a new one
    held_out: int = 4  # rooms of their own seeds for the found rates reported at the end
    episodes: int = 96  # trajectories per PPO iteration
    lr: float = 3e-4
    gamma: float = 0.99
    lam: float = 0.95
    clip: float = 0.2
    epochs: int = 4
    minibatch: int = 128
    entropy: float = 0.01
    value_weight: float = 0.5

    def __post_init__(self) -> None:
        if not 0 < self.minutes <= 90:
            raise EngineError("minutes must be in (0, 90]")
        if self.rooms < 1 or self.held_out < 1 or self.episodes < 2 or self.refresh_every < 1:
            raise EngineError("at least one training room, one held-out room and two episodes per iteration")


def _net(config: PolicyConfig):
    import torch
    from torch import nn

    class PolicyNet(nn.Module):
        """Actor-critic MLP; actions leaving the allowed range are masked out of the logits."""

        def __init__(self) -> None:
            super().__init__()
            self.config = config
            self.body = nn.Sequential(nn.Linear(config.observation, config.hidden), nn.Tanh(), nn.Linear(config.hidden, config.hidden), nn.Tanh())
            self.pi = nn.Linear(config.hidden, len(MOVES))
            self.v = nn.Linear(config.hidden, 1)
            nn.init.zeros_(self.pi.weight)
            nn.init.zeros_(self.pi.bias)

        def forward(self, obs: torch.Tensor, allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            h = self.body(obs)
            return self.pi(h).masked_fill(~allowed, -1e9), self.v(h).squeeze(-1)

    return PolicyNet()


@dataclass
class _Room:
    """A scene's object points with its cylinder index and the prior's verdict on every state seen."""

    points: np.ndarray
    floor_z: float
    anchors: np.ndarray
    height: float
    crops: CylinderCrops = field(init=False)
    seen: dict = field(default_factory=dict)  # state key -> (CropScore | None, crop features, latent)

    def __post_init__(self) -> None:
        self.crops = CylinderCrops(self.points, self.floor_z, self.height)


def _crop_features(sc: CropScore | None, crop: np.ndarray, ring: int, state: tuple[float, float, float], latent_dim: int) -> tuple[np.ndarray, np.ndarray]:
    x, y, r = state
    f = np.zeros(CROP_FEATURES, np.float32)
    f[0] = math.log1p(len(crop)) / 10.0
    f[1] = min(ring / max(len(crop), 1), 2.0)
    if sc is not None:
        f[2] = float(sc.valid)
        f[3] = min(sc.distance, 1.0) if math.isfinite(sc.distance) else 1.0
        f[4] = len(sc.mask) / max(len(sc.scored), 1)
        if len(sc.mask):
            xy = crop[sc.mask, :2]
            centre = xy.mean(0)
            f[5:7] = (centre - (x, y)) / r
            f[7] = float(np.linalg.norm(xy - centre, axis=1).max()) / r
    latent = sc.latent if sc is not None and sc.latent is not None else np.zeros(latent_dim, np.float32)
    return f, latent.astype(np.float32)


def _score_states(prior, room: _Room, states: list[tuple[float, float, float]], agent: AgentParams, reward: RewardParams,
                  rng: np.random.Generator, latent_dim: int) -> list[tuple]:
    """Score the states not seen yet in one batch through the prior; returns every state's entry."""
    todo, queued = [], set()
    for s in states:
        k = state_key(s)
        if k in room.seen or k in queued:
            continue
        queued.add(k)
        idx = room.crops.indices(*s)
        ring = room.crops.ring(*s)
        if len(idx) < agent.min_crop_points:
            room.seen[k] = (None, *_crop_features(None, room.points[idx], len(ring), s, latent_dim))
        else:
            todo.append((k, s, idx, ring))
    if todo:
        scores = score_crops(prior, [room.points[idx] for _, _, idx, _ in todo], reward, rng, axes=[s[:2] for _, s, _, _ in todo],
                             rings=[room.points[ring] for _, _, _, ring in todo])
        for (k, s, idx, ring), sc in zip(todo, scores):
            room.seen[k] = (sc, *_crop_features(sc, room.points[idx], len(ring), s, latent_dim))
    return [room.seen[state_key(s)] for s in states]


def _observation(entry: tuple, state: tuple[float, float, float], anchor: np.ndarray, step: int, p: AgentParams) -> np.ndarray:
    x, y, r = state
    own = np.array([r / p.max_radius, (x - anchor[0]) / p.anchor_range, (y - anchor[1]) / p.anchor_range, step / p.max_steps], np.float32)
    return np.concatenate([own, entry[1], entry[2]])


def _allowed(state: tuple[float, float, float], anchor: np.ndarray, p: AgentParams) -> np.ndarray:
    return np.array([moved(state, a, anchor, p) is not None for a in MOVES])


def _found(entry: tuple, reward: RewardParams) -> bool:
    return entry[0] is not None and entry[0].found(reward)


def _episodes(net, prior, rooms: list[_Room], starts: list[tuple[int, int]], agent: AgentParams, reward: RewardParams,
              rng: np.random.Generator, sample: bool, cancel: CancelToken = NEVER_CANCELLED) -> list[dict]:
    """Run one episode per (room, anchor) start, all in lockstep; returns their transitions."""
    import torch

    eps = []
    for room_i, anchor_i in starts:
        anchor = rooms[room_i].anchors[anchor_i]
        eps.append({"room": room_i, "anchor": anchor, "state": (float(anchor[0]), float(anchor[1]), agent.start_radius),
                    "obs": [], "allowed": [], "actions": [], "logp": [], "values": [], "rewards": [], "states": [], "done": False})
    for room_i in sorted({e["room"] for e in eps}):
        group = [e for e in eps if e["room"] == room_i]
        for e, entry in zip(group, _score_states(prior, rooms[room_i], [e["state"] for e in group], agent, reward, rng, net.config.latent)):
            e["entry"] = entry
            e["done"] = _found(entry, reward)
    for step in range(agent.max_steps):
        cancel.raise_if_cancelled()
        live = [e for e in eps if not e["done"]]
        if not live:
            break
        obs = np.stack([_observation(e["entry"], e["state"], e["anchor"], step, agent) for e in live])
        allowed = np.stack([_allowed(e["state"], e["anchor"], agent) for e in live])
        with torch.no_grad():
            logits, values = net(torch.from_numpy(obs), torch.from_numpy(allowed))
            dist = torch.distributions.Categorical(logits=logits)
            actions = dist.sample() if sample else logits.argmax(dim=1)
            logp = dist.log_prob(actions)
        by_room: dict[int, list] = {}
        for k, e in enumerate(live):
            a = int(actions[k])
            e["obs"].append(obs[k])
            e["allowed"].append(allowed[k])
            e["actions"].append(a)
            e["logp"].append(float(logp[k]))
            e["values"].append(float(values[k]))
            e["state"] = moved(e["state"], MOVES[a], e["anchor"], agent) or e["state"]
            e["states"].append(e["state"])
            by_room.setdefault(e["room"], []).append(e)
        for room_i, group in by_room.items():
            entries = _score_states(prior, rooms[room_i], [e["state"] for e in group], agent, reward, rng, net.config.latent)
            for e, entry in zip(group, entries):
                e["entry"] = entry
                found = _found(entry, reward)
                e["rewards"].append(FOUND_REWARD if found else STEP_REWARD)
                e["done"] = found
    return eps


def _advantages(eps: list[dict], gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """GAE over each episode; an episode ends (value 0 after it) when found or out of steps."""
    adv, ret = [], []
    for e in eps:
        v = e["values"] + [0.0]
        gae = 0.0
        out = np.zeros(len(e["rewards"]))
        for t in reversed(range(len(e["rewards"]))):
            delta = e["rewards"][t] + gamma * v[t + 1] - v[t]
            gae = delta + gamma * lam * gae
            out[t] = gae
        adv.append(out)
        ret.append(out + np.array(e["values"]))
    return np.concatenate(adv), np.concatenate(ret)


def _ppo_update(net, optimizer, eps: list[dict], params: PolicyTrainParams, gen) -> dict[str, float]:
    import torch

    eps = [e for e in eps if e["actions"]]
    if not eps:
        return {}
    adv, ret = _advantages(eps, params.gamma, params.lam)
    obs = torch.from_numpy(np.stack([o for e in eps for o in e["obs"]]))
    allowed = torch.from_numpy(np.stack([a for e in eps for a in e["allowed"]]))
    actions = torch.tensor([a for e in eps for a in e["actions"]])
    old_logp = torch.tensor([lp for e in eps for lp in e["logp"]], dtype=torch.float32)
    adv_t = torch.from_numpy(((adv - adv.mean()) / (adv.std() + 1e-8)).astype(np.float32))
    ret_t = torch.from_numpy(ret.astype(np.float32))
    n = len(actions)
    stats = {"policy": 0.0, "value": 0.0, "entropy": 0.0}
    for _ in range(params.epochs):
        order = torch.randperm(n, generator=gen)
        for lo in range(0, n, params.minibatch):
            mb = order[lo : lo + params.minibatch]
            logits, values = net(obs[mb], allowed[mb])
            dist = torch.distributions.Categorical(logits=logits)
            ratio = (dist.log_prob(actions[mb]) - old_logp[mb]).exp()
            clipped = ratio.clamp(1 - params.clip, 1 + params.clip)
            policy_loss = -torch.min(ratio * adv_t[mb], clipped * adv_t[mb]).mean()
            value_loss = (values - ret_t[mb]).pow(2).mean()
            entropy = dist.entropy().mean()
            loss = policy_loss + params.value_weight * value_loss - params.entropy * entropy
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
            optimizer.step()
            stats = {"policy": float(policy_loss.detach()), "value": float(value_loss.detach()), "entropy": float(entropy.detach())}
    return stats


def training_room(seed: int, agent: AgentParams = AgentParams()) -> _Room:
    """A procedural room with planes removed and anchors placed, as the pipeline prepares a scene."""
    from .planes import PlaneParams, farthest_point_anchors, remove_planes
    from .scenes import generate_scene

    scene = generate_scene(seed)
    keep, _, floor_z = remove_planes(scene.points.astype(np.float64), PlaneParams(), seed)  # the pipeline's default planes
    obj = scene.points[keep].astype(np.float64)  # points only: the instance ids stay in the scene
    return _Room(obj, floor_z, farthest_point_anchors(obj, agent.anchors), agent.height)


def _open_anchors(net, prior, room: _Room, agent: AgentParams, reward: RewardParams, rng: np.random.Generator) -> list[int]:
    """The anchors whose start cylinder the prior does not already call an object: where choices matter."""
    states = [(float(a[0]), float(a[1]), agent.start_radius) for a in room.anchors]
    entries = _score_states(prior, room, states, agent, reward, rng, net.config.latent)
    return [j for j, entry in enumerate(entries) if entry[0] is not None and not _found(entry, reward)]


def found_rate(net, prior, rooms: list[_Room], starts: list[tuple[int, int]], agent: AgentParams, reward: RewardParams,
               rng: np.random.Generator) -> float:
    """Share of episodes (argmax actions) that end with an object found."""
    eps = _episodes(net, prior, rooms, starts, agent, reward, rng, sample=False)
    return float(np.mean([e["done"] for e in eps])) if eps else float("nan")


def search_found_rate(prior, rooms: list[_Room], starts: list[tuple[int, int]], agent: AgentParams, reward: RewardParams,
                      rng: np.random.Generator) -> float:
    """The same share for the greedy search of `agent.py` from the same starts (the peer to beat)."""
    from .agent import run_agent

    found = []
    for i, room in enumerate(rooms):
        picked = [j for r, j in starts if r == i]
        if picked:
            trajs, _ = run_agent(prior, room.points, room.floor_z, room.anchors[picked], agent, reward, rng)
            found += [t.found for t in trajs]
    return float(np.mean(found)) if found else float("nan")


def train_policy(out: Path, params: PolicyTrainParams = PolicyTrainParams(), prior_path: Path | None = None,
                 progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED) -> dict:
    """PPO for ``params.minutes`` against the frozen prior; writes the policy to ``out``.

    The rooms are a rolling pool: every ``refresh_every`` iterations the oldest is replaced by a
    new one, so the policy cannot learn the pool's cylinders by heart (a fixed pool of 32 rooms
    gave 97-100% found on its own anchors and 69% on held-out rooms)."""
    import torch

    from engines.core import configure_threads, seed_everything

    from .prior import load_prior

    configure_threads()
    seed_everything(params.seed)
    agent, reward = AgentParams(), RewardParams()
    prior = load_prior(prior_path)
    config = PolicyConfig(latent=prior.config.latent)
    net = _net(config)
    optimizer = torch.optim.Adam(net.parameters(), lr=params.lr)
    gen = torch.Generator().manual_seed(params.seed)
    rng = np.random.default_rng(params.seed)
    first = TRAIN_ROOM_SEED + 10_000 * params.seed
    progress(0.0, f"building {params.rooms} training rooms")
    rooms = [training_room(first + k, agent) for k in range(params.rooms)]
    held_out = [training_room(first + HELD_OUT_OFFSET + k, agent) for k in range(params.held_out)]
    starts = [_open_anchors(net, prior, room, agent, reward, rng) for room in rooms]
    held_starts = [(i, j) for i, room in enumerate(held_out) for j in _open_anchors(net, prior, room, agent, reward, rng)]
    before = found_rate(net, prior, held_out, held_starts, agent, reward, rng)
    budget = params.minutes * 60.0
    t0 = time.monotonic()
    history, iteration, built = [], 0, params.rooms
    while time.monotonic() - t0 < budget:
        cancel.raise_if_cancelled()
        if iteration and iteration % params.refresh_every == 0 and built < HELD_OUT_OFFSET:
            slot = built % params.rooms
            rooms[slot] = training_room(first + built, agent)
            starts[slot] = _open_anchors(net, prior, rooms[slot], agent, reward, rng)
            built += 1
        pool = [(i, j) for i, js in enumerate(starts) for j in js]
        if not pool:
            raise EngineError("the prior finds every start cylinder of the training rooms: nothing for a policy to learn")
        pick = rng.integers(len(pool), size=params.episodes)
        eps = _episodes(net, prior, rooms, [pool[i] for i in pick], agent, reward, rng, sample=True)
        stats = _ppo_update(net, optimizer, eps, params, gen)
        iteration += 1
        entry = {"iteration": iteration, "seconds": round(time.monotonic() - t0, 1), "rooms_seen": built,
                 "found": float(np.mean([e["done"] for e in eps])), "steps": float(np.mean([len(e["actions"]) for e in eps])),
                 **{k: round(v, 5) for k, v in stats.items()}}
        history.append(entry)
        progress(min((time.monotonic() - t0) / budget, 0.99),
                 f"iteration {iteration} ({built} rooms): found {entry['found']:.0%} in {entry['steps']:.1f} steps")
    net.eval()
    metrics = {"held_out_found_before": before, "held_out_found": found_rate(net, prior, held_out, held_starts, agent, reward, rng),
               "held_out_found_by_search": search_found_rate(prior, held_out, held_starts, agent, reward, rng),
               "held_out_episodes": len(held_starts), "rooms_seen": built, "iterations": iteration,
               "seconds": round(time.monotonic() - t0, 1)}
    save_policy(out, net, {"params": asdict(params), "history": history, "metrics": metrics})
    progress(1.0, "done")
    return {"out": str(out), **metrics}


def save_policy(path: Path, net, state: dict) -> None:
    import torch

    with atomic_path(path) as tmp:
        torch.save({"format": FORMAT, "config": asdict(net.config), "model": net.state_dict(), "state": state}, tmp)


def shipped_policy_path() -> Path:
    from engines.core import resource_path

    return resource_path("segmentation", "policy.pt")


_cache: dict[str, tuple[float, object]] = {}


def load_policy(path: Path | None = None):
    """The policy network (eval mode, cached by modification time); one clear error for a missing or foreign file."""
    from engines.core.checkpoint import read_checkpoint

    path = Path(path) if path else shipped_policy_path()
    if not path.exists():
        raise EngineError(f"policy checkpoint {path} not found (train one with 'workbench segmentation train-policy')")
    key, mtime = str(path.resolve()), path.stat().st_mtime
    hit = _cache.get(key)
    if hit is not None and hit[0] == mtime:
        return hit[1]
    payload = read_checkpoint(path, "segmentation policy checkpoint", keys=("config", "model"), fmt=FORMAT)
    try:
        net = _net(PolicyConfig(**payload["config"]))
        net.load_state_dict(payload["model"])
    except (KeyError, TypeError, RuntimeError, ValueError, AttributeError) as exc:
        raise EngineError(f"{path.name} is not a segmentation policy checkpoint ({type(exc).__name__})") from None
    net.eval()
    for p in net.parameters():
        p.requires_grad_(False)
    _cache[key] = (mtime, net)
    return net


def run_policy_agent(net, prior, points: np.ndarray, floor_z: float, anchors: np.ndarray, params: AgentParams, reward: RewardParams,
                     rng: np.random.Generator, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED) -> tuple[list[Trajectory], dict]:
    """`run_agent`'s contract with the learned policy choosing each action (its most likely one)."""
    room = _Room(points, floor_z, anchors, params.height)
    trajs = []
    progress(0.1, "policy agent")
    episodes = _episodes(net, prior, [room], [(0, j) for j in range(len(anchors))], params, reward, rng, sample=False, cancel=cancel)
    for e in episodes:
        anchor = e["anchor"]
        t = Trajectory(tuple(float(v) for v in anchor))
        start = (float(anchor[0]), float(anchor[1]), params.start_radius)
        states = [start] + e["states"]
        names = ["start"] + [MOVES[a] for a in e["actions"]]
        for name, s in zip(names, states):
            sc = room.seen[state_key(s)][0]
            d = sc.distance if sc is not None and sc.valid else float("inf")
            found = sc is not None and sc.found(reward)
            t.steps.append(Step(name, s[0], s[1], s[2], d, FOUND_REWARD if found else STEP_REWARD))
        t.found = bool(e["done"])
        if t.found:
            t.steps.append(Step("stop", *t.state, t.steps[-1].distance, 0.0))
        trajs.append(t)
    progress(1.0, f"policy agent: {sum(t.found for t in trajs)} of {len(trajs)} trajectories found an object")
    return trajs, room.seen
