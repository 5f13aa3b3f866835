"""Top-down frames of an episode drawn with Pillow (no Qt), and GIF/MP4 export with imageio."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, atomic_path, no_progress

from .episode import Episode
from .geometry import box_corners
from .vehicle import LENGTH, WIDTH

COLORS = {
    "background": (28, 31, 36), "lane": (70, 74, 82), "boundary": (200, 200, 200), "route": (70, 130, 230),
    "agent": (90, 170, 220), "ego": (235, 80, 60), "history": (240, 140, 120), "sample": (250, 210, 120),
    "chosen": (255, 170, 0), "prediction": (190, 120, 230), "expert": (80, 200, 120), "collision": (255, 40, 40),
    "static": (240, 220, 60), "text": (230, 230, 230),
}


class FrameRenderer:
    """Draws episode frames centred on the ego (north up), ``metres`` wide."""

    def __init__(self, episode: Episode, size: tuple[int, int] = (800, 600), metres: float = 90.0) -> None:
        self.ep = episode
        self.w, self.h = size
        self.scale = self.w / metres
        sc = episode.scenario
        self.lanes = [(np.asarray(l.left), np.asarray(l.right)) for l in sc.lanes]
        self.areas = [np.asarray(a, dtype=float) for a in sc.areas]
        from .scene import Scene

        self.route = Scene(sc).route_path.points
        self.statics = [box_corners(o.x, o.y, o.heading, o.length, o.width) for o in sc.static_objects]
        self.collisions = {c.step for c in episode.metrics.collisions}

    def _pix(self, xy: np.ndarray, center: np.ndarray) -> list[tuple[float, float]]:
        p = (np.asarray(xy, dtype=float) - center) * self.scale
        return [(self.w / 2 + x, self.h / 2 - y) for x, y in p.reshape(-1, 2)]

    def frame(self, k: int) -> Image.Image:
        ep = self.ep
        img = Image.new("RGB", (self.w, self.h), COLORS["background"])
        d = ImageDraw.Draw(img)
        center = ep.ego[k, :2]
        for area in self.areas:
            d.polygon(self._pix(area, center), fill=COLORS["lane"])
        for left, right in self.lanes:
            d.polygon(self._pix(np.concatenate([left, right[::-1]]), center), fill=COLORS["lane"])
        for left, right in self.lanes:
            d.line(self._pix(left, center), fill=COLORS["boundary"], width=1)
            d.line(self._pix(right, center), fill=COLORS["boundary"], width=1)
        d.line(self._pix(self.route, center), fill=COLORS["route"], width=2)
        if ep.expert is not None:
            d.line(self._pix(ep.expert[:, :2], center), fill=COLORS["expert"], width=1)
        for box in self.statics:
            d.polygon(self._pix(box, center), fill=COLORS["static"])
        for j in range(len(ep.agent_ids)):
            if not ep.valid[k, j]:
                continue
            a = ep.agents[k, j]
            box = box_corners(a[0], a[1], a[2], ep.agent_size[j, 0], ep.agent_size[j, 1])
            d.polygon(self._pix(box, center), outline=COLORS["agent"], width=2)
            nose = self._pix(np.array([a[:2], a[:2] + 0.5 * ep.agent_size[j, 0] * np.array([np.cos(a[2]), np.sin(a[2])])]), center)
            d.line(nose, fill=COLORS["agent"], width=2)
        if k < len(ep.plans):
            plan = ep.plans[k]
            if plan.samples is not None:
                for i, s in enumerate(plan.samples):
                    if i != plan.chosen:
                        d.line(self._pix(s, center), fill=COLORS["sample"], width=1)
            if plan.predictions is not None:
                for pr in plan.predictions:
                    d.line(self._pix(pr, center), fill=COLORS["prediction"], width=1)
            d.line(self._pix(plan.trajectory[:, :2], center), fill=COLORS["chosen"], width=3)
        d.line(self._pix(ep.ego[: k + 1, :2], center), fill=COLORS["history"], width=2)
        e = ep.ego[k]
        hit = any(abs(k - c) <= 3 for c in self.collisions)
        d.polygon(self._pix(box_corners(e[0], e[1], e[2], LENGTH, WIDTH), center), fill=COLORS["collision"] if hit else COLORS["ego"])
        d.text((10, 8), f"{ep.scenario.name}  {ep.planner}  t = {k * ep.dt:4.1f} s  v = {e[3]:4.1f} m/s  CLS {ep.score:.1f}", fill=COLORS["text"])
        return img


def render_video(episode: Episode, out: Path, fps: int = 10, size: tuple[int, int] = (800, 600), progress: ProgressFn = no_progress,
                 cancel: CancelToken = NEVER_CANCELLED) -> dict:
    import imageio.v2 as imageio

    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in (".mp4", ".gif"):
        raise EngineError(f"cannot write {out.name}: the video must end in .mp4 or .gif")
    if not (1 <= fps <= 60):
        raise EngineError("fps must be 1-60")
    size = (size[0] - size[0] % 2, size[1] - size[1] % 2)
    renderer = FrameRenderer(episode, size)
    n = len(episode.ego)
    with atomic_path(out) as tmp:
        kwargs = {"fps": fps, "macro_block_size": 1} if suffix == ".mp4" else {"duration": 1000.0 / fps, "loop": 0}
        with imageio.get_writer(tmp, format="FFMPEG" if suffix == ".mp4" else "GIF", mode="I", **kwargs) as writer:
            for k in range(n):
                cancel.raise_if_cancelled()
                writer.append_data(np.asarray(renderer.frame(k)))
                progress((k + 1) / n, f"frame {k + 1}/{n}")
    return {"out": str(out), "frames": n, "fps": fps, "width": size[0], "height": size[1], "bytes": out.stat().st_size}
