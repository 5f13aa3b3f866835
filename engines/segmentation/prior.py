"""Stage 1 of GrabS: the object prior (pose head, PointNet VAE encoder, MLP signed-distance decoder).

Inputs are normalised crops: as in GrabS, centred on the cylinder's axis (the middle of the
points' height range), scaled so the crop fits the unit cube; the object the crop is about sits
at the origin and clutter towards the sides. The pose head predicts the yaw (with pitch and roll within ±15°) and the crop is rotated into the
canonical frame before encoding; queries are rotated the same way before decoding, so the
decoder only ever sees upright, canonically turned objects.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from engines.core import EngineError, atomic_path
from engines.core.checkpoint import read_checkpoint

MAX_TILT = math.radians(15.0)
FORMAT = "workbench-segmentation-prior"  # written since the safe loader; the shipped file predates it


@dataclass(frozen=True)
class PriorConfig:
    latent: int = 64
    encoder: tuple[int, ...] = (64, 128, 256)
    pose: tuple[int, ...] = (32, 64, 128)
    decoder: int = 128
    decoder_layers: int = 4
    # Voxel size (normalised units) the encoder's input is thinned to, in training and inference
    # alike, so a crop's density (near or far from the sensor, 5k or 1M points a room) does not
    # change what the encoder sees; 0 = plain random subsampling (checkpoints before it).
    voxel: float = 0.0


# Network sizes `train-prior --model` offers; "base" is the shipped prior's.
MODEL_SIZES: dict[str, PriorConfig] = {
    "base": PriorConfig(),
    "large": PriorConfig(latent=128, encoder=(64, 128, 512), pose=(32, 64, 128), decoder=256, decoder_layers=4),
}


def normalise(points: np.ndarray, axis: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Centre and scale mapping a crop into the unit cube, centred on a vertical axis.

    ``axis`` is the cylinder's (x, y); without it, the middle of the points' bounding box.
    """
    lo, hi = points.min(0), points.max(0)
    xy = (lo[:2] + hi[:2]) / 2.0 if axis is None else np.asarray(axis, dtype=np.float64)[:2]
    center = np.array([xy[0], xy[1], (lo[2] + hi[2]) / 2.0])
    radial = float(np.abs(points[:, :2] - xy).max()) if len(points) else 0.0
    return center, float(max(2.0 * radial, hi[2] - lo[2], 1e-6))


def encoder_inputs(points: np.ndarray, n: int, voxel: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` encoder points from a normalised crop: voxel down-sampled first when ``voxel`` > 0.

    Open3D averages the points of each voxel; the encoder then sees every occupied voxel about
    equally often, instead of dense patches crowding out sparse parts of the crop.
    """
    pts = np.asarray(points, dtype=np.float64)
    if voxel > 0 and len(pts) > n:
        from engines.core.imports import open3d

        o3d = open3d()
        cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(pts))
        thinned = np.asarray(cloud.voxel_down_sample(voxel).points)
        if len(thinned) >= 8:
            pts = thinned
    return pts[rng.choice(len(pts), n, replace=len(pts) < n)]


class _PointNet(nn.Module):
    """Shared per-point MLP and max pooling: a permutation-invariant set feature."""

    def __init__(self, widths: tuple[int, ...]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        prev = 3
        for i, w in enumerate(widths):
            layers.append(nn.Linear(prev, w))
            if i < len(widths) - 1:
                layers.append(nn.ReLU())
            prev = w
        self.mlp = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, N, 3) -> (B, C)
        return self.mlp(x).max(dim=1).values


class ObjectPrior(nn.Module):
    def __init__(self, config: PriorConfig = PriorConfig()) -> None:
        super().__init__()
        self.config = config
        self.pose_net = _PointNet(config.pose)
        self.pose_fc = nn.Sequential(nn.ReLU(), nn.Linear(config.pose[-1], 64), nn.ReLU(), nn.Linear(64, 4))
        self.encoder = _PointNet(config.encoder)
        self.enc_fc = nn.Sequential(nn.ReLU(), nn.Linear(config.encoder[-1], 128), nn.ReLU())
        self.mu = nn.Linear(128, config.latent)
        self.logvar = nn.Linear(128, config.latent)
        # Start with a nearly deterministic latent: with unit noise at the start the decoder learns
        # to ignore z and the posterior collapses.
        nn.init.constant_(self.logvar.bias, -8.0)
        nn.init.normal_(self.logvar.weight, std=1e-3)
        h = config.decoder
        self.dec_xyz = nn.Linear(3, h, bias=False)
        self.dec_z = nn.Linear(config.latent, h)
        self.dec = nn.Sequential(*[m for _ in range(config.decoder_layers - 1) for m in (nn.ReLU(), nn.Linear(h, h))], nn.ReLU(), nn.Linear(h, 1))

    # Pose ------------------------------------------------------------------------------------
    def pose(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Yaw, pitch, roll (radians) of the object in a normalised crop (B, N, 3)."""
        out = self.pose_fc(self.pose_net(x))
        yaw = torch.atan2(out[:, 1], out[:, 0])
        tilt = torch.tanh(out[:, 2:]) * MAX_TILT
        return yaw, tilt[:, 0], tilt[:, 1]

    @staticmethod
    def rotation(yaw: torch.Tensor, pitch: torch.Tensor, roll: torch.Tensor) -> torch.Tensor:
        """R = Rz(yaw) Ry(pitch) Rx(roll), batched (B, 3, 3); world = R @ canonical."""
        cz, sz, cy, sy, cx, sx = yaw.cos(), yaw.sin(), pitch.cos(), pitch.sin(), roll.cos(), roll.sin()
        one, zero = torch.ones_like(yaw), torch.zeros_like(yaw)
        rz = torch.stack([cz, -sz, zero, sz, cz, zero, zero, zero, one], -1).view(-1, 3, 3)
        ry = torch.stack([cy, zero, sy, zero, one, zero, -sy, zero, cy], -1).view(-1, 3, 3)
        rx = torch.stack([one, zero, zero, zero, cx, -sx, zero, sx, cx], -1).view(-1, 3, 3)
        return rz @ ry @ rx

    # VAE -------------------------------------------------------------------------------------
    def encode(self, x: torch.Tensor, rot: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, tuple[torch.Tensor, ...]]:
        """Canonicalise and encode a normalised crop: (mu, logvar, R, (yaw, pitch, roll)).

        ``rot`` overrides the predicted rotation (training feeds the true pose part of the time).
        """
        angles = self.pose(x)
        if rot is None:
            rot = self.rotation(*angles).detach()  # the pose head learns from its own loss only
        feat = self.enc_fc(self.encoder(x @ rot))  # row vectors: p_canonical = R^T p
        return self.mu(feat), self.logvar(feat).clamp(-10, 4), rot, angles

    def decode(self, z: torch.Tensor, rot: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """Signed distance (normalised units) at queries q (B, Q, 3) given in the crop's frame."""
        h = self.dec_xyz(q @ rot) + self.dec_z(z)[:, None, :]
        return self.dec(h).squeeze(-1)

    def forward(self, x: torch.Tensor, q: torch.Tensor, sample: bool = True, rot: torch.Tensor | None = None):
        """Training pass: (sdf at q, mu, logvar, (yaw, pitch, roll))."""
        mu, logvar, rot, angles = self.encode(x, rot)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp() if sample else mu
        return self.decode(z, rot, q), mu, logvar, angles


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def save_checkpoint(path: Path, model: ObjectPrior, optimizer: torch.optim.Optimizer | None, state: dict) -> Path:
    payload = {"format": FORMAT, "config": asdict(model.config), "model": model.state_dict(), "state": state}
    if optimizer is not None:
        payload["optimizer"] = optimizer.state_dict()
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)
    return path


def load_checkpoint(path: Path) -> tuple[ObjectPrior, dict]:
    """The prior (eval mode) and the full checkpoint dict; one clear error for a bad file."""
    path = Path(path)
    if not path.exists():
        raise EngineError(f"prior checkpoint {path} not found")
    payload = read_checkpoint(path, "segmentation prior checkpoint", keys=("config", "model"), fmt=FORMAT)
    try:
        cfg = payload["config"]
        config = PriorConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in cfg.items()})
        model = ObjectPrior(config)
        model.load_state_dict(payload["model"])
    except (KeyError, TypeError, RuntimeError, ValueError, AttributeError) as exc:
        raise EngineError(f"{path.name} is not a segmentation prior checkpoint ({type(exc).__name__})") from None
    model.eval()
    return model, payload


_cache: dict[str, tuple[float, ObjectPrior]] = {}


def shipped_prior_path() -> Path:
    from engines.core import resource_path

    return resource_path("segmentation", "prior.pt")


def load_prior(path: Path | None = None) -> ObjectPrior:
    """Load (and cache by modification time) the prior; the shipped one by default."""
    path = Path(path) if path is not None else shipped_prior_path()
    key = str(path.resolve())
    mtime = path.stat().st_mtime if path.exists() else -1.0
    hit = _cache.get(key)
    if hit is not None and hit[0] == mtime:
        return hit[1]
    model, _ = load_checkpoint(path)
    for p in model.parameters():
        p.requires_grad_(False)
    _cache[key] = (mtime, model)
    return model
