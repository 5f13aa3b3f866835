"""GrabS's objectness reward, computed from the frozen object prior alone, for many crops at once.

For each crop (the points inside a cylinder): normalise it, encode it, decode the signed distance
at its points and keep those with |SDF| <= the mask threshold; re-encode that mask on its own,
decode the surface it implies (grid points pulled onto the zero level set), and measure the
two-way distance between mask points and that surface. Below the found threshold the crop holds
an object. All crops of one agent step go through the prior in a few batched passes.
"""
from __future__ import annotations

from engines.core import EngineError

from dataclasses import dataclass

import numpy as np

from .neighbours import connected_parts

SURFACE_BAND = 0.09  # grid points this close to the decoded zero level are pulled onto it


@dataclass(frozen=True)
class RewardParams:
    mask_threshold: float = 0.02  # |SDF| <= it (normalised units) is on the object
    found_threshold: float = 0.14  # two-way distance (normalised) below it: object found (GrabS: 0.10-0.14)
    inputs: int = 256  # points fed to the encoder (as in training)
    queries: int = 512  # crop points scored per step (all of them for final masks)
    grid: int = 8  # surface extraction grid per side
    surface_samples: int = 384  # mask points the decoded surface is compared with
    min_mask_points: int = 80  # the floor and walls hide up to a fifth of a small object's points (`api.with_min_points`)
    min_radius: float = 0.15  # the mask's horizontal radius (m)
    max_radius: float = 1.5  # GrabS: 1.1 for its categories; ours reach 1.3 (sofas) and 1.5 (beds)
    component: float = 0.15  # keep one connected part of the mask, the one at the axis (link distance, m); 0 = off
    reject_cut: bool = True  # invalid if the masked object goes on past the cylinder's wall
    grow: float = 3.0  # final segments (after both searches; and whole-crop scores): add connected points within grow x mask_threshold (1 = off)

    def __post_init__(self) -> None:
        if not 0 < self.mask_threshold < 0.5 or not 0 < self.found_threshold < 1.0:
            raise EngineError("thresholds must be positive and small (normalised units)")


@dataclass(frozen=True)
class CropScore:
    valid: bool
    distance: float  # two-way (chamfer-like) distance; inf when invalid
    pc_to_surface: float
    surface_to_pc: float
    mask: np.ndarray  # indices (into the crop) of the points kept as the object
    residual: np.ndarray  # |SDF| of the scored crop points (normalised, second pass where valid)
    scored: np.ndarray  # indices (into the crop) of the points that were scored
    latent: np.ndarray | None = None  # the prior's encoding of the whole crop (what a learned policy observes)

    def found(self, params: RewardParams) -> bool:
        return self.valid and self.distance <= params.found_threshold


def _normalised_inputs(crops: list[np.ndarray], n: int, rng: np.random.Generator, axes: list | None = None, voxel: float = 0.0):
    """Encoder inputs as the prior was trained on them (``voxel``: its density normalisation)."""
    import torch

    from .prior import encoder_inputs, normalise

    centers, scales, xs = [], [], []
    for k, pts in enumerate(crops):
        c, s = normalise(pts, None if axes is None else axes[k])
        xs.append(encoder_inputs((pts - c) / s, n, voxel, rng))
        centers.append(c)
        scales.append(s)
    return torch.from_numpy(np.stack(xs).astype(np.float32)), np.stack(centers), np.array(scales)


def _padded(arrays: list[np.ndarray]):
    import torch

    length = max(1, max(len(a) for a in arrays))
    out = np.zeros((len(arrays), length, 3), np.float32)
    valid = np.zeros((len(arrays), length), bool)
    for i, a in enumerate(arrays):
        out[i, : len(a)] = a
        valid[i, : len(a)] = True
    return torch.from_numpy(out), torch.from_numpy(valid)


def _surface(prior, z, rot, grid: int, iterations: int = 2):
    """Points on each decoded surface: grid points near the zero level, pulled onto it (B, G^3, 3).

    Returns the points and which of them started within the band where the learned distance is
    reliable (it is trained up to 0.15, so only grid points below SURFACE_BAND are projected).
    """
    import torch

    lin = torch.linspace(-0.6, 0.6, grid)
    g = torch.stack(torch.meshgrid(lin, lin, lin, indexing="ij"), -1).reshape(1, -1, 3).repeat(len(z), 1, 1)
    near = None
    for _ in range(iterations):
        with torch.enable_grad():
            g = g.detach().requires_grad_(True)
            d = prior.decode(z, rot, g)
            (grad,) = torch.autograd.grad(d.sum(), g)
        with torch.no_grad():
            if near is None:
                near = d.abs() <= SURFACE_BAND
            normal = grad / grad.norm(dim=-1, keepdim=True).clamp(min=1e-6)
            g = g - d[..., None] * normal
    return g.detach(), near


def _main_part(pts: np.ndarray, link: float, axis=None, min_points: float = 0) -> np.ndarray:
    """Indices of one connected part of a point set: the part nearest the cylinder's axis among
    those with ``min_points``, else the largest."""
    if len(pts) < 3:
        return np.arange(len(pts))
    labels = connected_parts(pts, link)
    sizes = np.bincount(labels)
    if axis is None or not (sizes >= min_points).any():
        return np.flatnonzero(labels == sizes.argmax())
    d = np.hypot(pts[:, 0] - axis[0], pts[:, 1] - axis[1])
    d[sizes[labels] < min_points] = np.inf
    return np.flatnonzero(labels == labels[int(d.argmin())])


def _grown(pts: np.ndarray, mask: np.ndarray, residual: np.ndarray, params: RewardParams, link: float) -> np.ndarray:
    """Hysteresis on the final mask: add the points within ``grow`` times the mask threshold of
    either decoded surface that connect to the mask through such points (parts the prior decodes
    a little off the surface), never points far from it (a touching neighbour)."""
    loose = np.union1d(np.flatnonzero(residual <= params.grow * params.mask_threshold), mask)
    if len(loose) == len(mask) or len(mask) == 0:
        return mask
    labels = connected_parts(pts[loose], link)
    seeds = np.unique(labels[np.searchsorted(loose, mask)])
    return loose[np.isin(labels, seeds)]


def _continues_outside(mask_pts: np.ndarray, ring: np.ndarray, ring_sdf: np.ndarray, params: RewardParams, link: float) -> bool:
    """True when points just outside the wall lie on the decoded object and touch the mask."""
    from scipy.spatial import cKDTree

    on_object = ring[ring_sdf <= params.mask_threshold]
    if len(on_object) == 0 or len(mask_pts) == 0:
        return False
    d, _ = cKDTree(mask_pts).query(on_object, k=1, distance_upper_bound=link)
    return int(np.isfinite(d).sum()) >= 3


def score_crops(prior, crops: list[np.ndarray], params: RewardParams, rng: np.random.Generator, full: bool = False,
                axes: list | None = None, rings: list[np.ndarray] | None = None) -> list[CropScore]:
    """The reward terms for each crop (points in metres, ``axes`` the cylinders' x, y).

    ``full`` scores every point of each crop (final masks) instead of a sample. ``rings`` are the
    points just outside each cylinder, used to tell a whole object from one cut by the wall.
    """
    import torch

    if not crops:
        return []
    with torch.no_grad():
        x, centers, scales = _normalised_inputs(crops, params.inputs, rng, axes, prior.config.voxel)
        mu, _, rot, _ = prior.encode(x)
        scored = [np.arange(len(c)) if full or len(c) <= params.queries else np.sort(rng.choice(len(c), params.queries, replace=False)) for c in crops]
        q, qvalid = _padded([(c[s] - centers[i]) / scales[i] for i, (c, s) in enumerate(zip(crops, scored))])
        sdf1 = prior.decode(mu, rot, q).abs().numpy()
        ring_sdf = None
        if rings is not None and params.reject_cut:
            r, rvalid = _padded([(ring - centers[i]) / scales[i] for i, ring in enumerate(rings)])
            ring_sdf = prior.decode(mu, rot, r).abs().numpy()
    qvalid = qvalid.numpy()
    latent = mu.numpy()
    masks, mask_pts, ok, link_of = [], [], [], []
    for i, c in enumerate(crops):
        m = np.flatnonzero((sdf1[i] <= params.mask_threshold) & qvalid[i])
        # Links get longer when only a sample of the crop is scored (sparser points).
        link = params.component * np.sqrt(len(c) / max(len(scored[i]), 1))
        link_of.append(link)
        need = params.min_mask_points * len(scored[i]) / max(len(c), 1)  # scaled to the share scored
        if params.component > 0 and len(m):
            m = m[_main_part(c[scored[i][m]], link, None if axes is None else axes[i], need)]
        pts = c[scored[i][m]]
        # Enough points, a plausible footprint: GrabS's validity checks.
        good = len(m) >= max(8, need)
        if good:
            radius = np.linalg.norm(pts[:, :2] - pts[:, :2].mean(0), axis=1).max()
            good = params.min_radius <= radius <= params.max_radius
        if good and ring_sdf is not None and len(rings[i]):
            good = not _continues_outside(pts, rings[i], ring_sdf[i][: len(rings[i])], params, link)
        masks.append(m)
        mask_pts.append(pts)
        ok.append(good)
    results: list[CropScore | None] = [None] * len(crops)
    live = [i for i in range(len(crops)) if ok[i]]
    for i in range(len(crops)):
        if not ok[i]:
            results[i] = CropScore(False, float("inf"), float("inf"), float("inf"), scored[i][masks[i]], sdf1[i][qvalid[i]], scored[i], latent[i])
    if live:
        with torch.no_grad():
            x2, c2, s2 = _normalised_inputs([mask_pts[i] for i in live], params.inputs, rng, voxel=prior.config.voxel)
            mu2, _, rot2, _ = prior.encode(x2)
            q2, q2valid = _padded([(crops[i][scored[i]] - c2[k]) / s2[k] for k, i in enumerate(live)])
            sdf2 = prior.decode(mu2, rot2, q2).abs()
        surf, near = _surface(prior, mu2, rot2, params.grid)
        with torch.no_grad():
            thin = [mask_pts[i] if len(mask_pts[i]) <= params.surface_samples else mask_pts[i][rng.choice(len(mask_pts[i]), params.surface_samples, replace=False)] for i in live]
            m2, m2valid = _padded([(pts - c2[k]) / s2[k] for k, pts in enumerate(thin)])
            dist = torch.cdist(surf, m2)  # (B, G^3, M)
            dist = dist.masked_fill(~m2valid[:, None, :], float("inf")).min(dim=2).values
            surf_to_pc = (dist * near).sum(1) / near.sum(1).clamp(min=1)
        sdf2 = sdf2.numpy()
        q2valid = q2valid.numpy()
        for k, i in enumerate(live):
            resid = sdf2[k][q2valid[k]]
            inmask = resid[masks[i]]
            pc_to_surf = float(inmask.mean()) if len(inmask) else float("inf")
            s2p = float(surf_to_pc[k]) if bool(near[k].any()) else float("inf")
            mask = masks[i]
            if full and params.grow > 1.0:
                mask = _grown(crops[i][scored[i]], mask, np.minimum(sdf1[i][: len(scored[i])], resid), params, link_of[i])
            results[i] = CropScore(True, pc_to_surf + s2p, pc_to_surf, s2p, scored[i][mask], resid, scored[i], latent[i])
    return results  # type: ignore[return-value]
