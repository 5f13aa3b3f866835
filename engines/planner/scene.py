"""A scenario's map made ready for simulation: lane geometry, the route's reference line,
the drivable area (shapely polygon plus a signed-distance grid for fast and differentiable
queries) and lane look-ups. Built once per scenario and shared by every planner run on it."""
from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import shapely
from shapely.geometry import Polygon
from shapely.strtree import STRtree

from engines.core import EngineError

from .geometry import Polyline, wrap_angle
from .scenario import Agent, Scenario

GRID_RES = 0.25  # m per cell of the signed-distance grid
GRID_MAX_CELLS = 3_000_000
BLEND_LEN = 30.0  # m over which a route lane change blends between the two lanes


@dataclass
class LaneGeom:
    id: str
    center: Polyline
    left: np.ndarray
    right: np.ndarray
    polygon: Polygon
    speed_limit: float
    successors: tuple[str, ...]
    left_neighbor: str | None
    right_neighbor: str | None

    @property
    def width(self) -> float:
        n = min(len(self.left), len(self.right))
        return float(np.median(np.linalg.norm(self.left[:n] - self.right[:n], axis=1))) if n else 3.5


@dataclass
class SignedDistanceGrid:
    """Signed distance to the drivable area's edge (m, positive outside) on a regular grid."""

    origin: np.ndarray  # world xy of cell (0, 0)
    res: float
    values: np.ndarray  # (rows=y, cols=x) float32

    def sample(self, xy: np.ndarray) -> np.ndarray:
        """Bilinear look-up at points (..., 2); far outside the grid reads as far outside."""
        p = (np.asarray(xy, dtype=float) - self.origin) / self.res
        h, w = self.values.shape
        x = np.clip(p[..., 0], 0, w - 1.001)
        y = np.clip(p[..., 1], 0, h - 1.001)
        x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
        fx, fy = x - x0, y - y0
        v = self.values
        top = v[y0, x0] * (1 - fx) + v[y0, x0 + 1] * fx
        bot = v[y0 + 1, x0] * (1 - fx) + v[y0 + 1, x0 + 1] * fx
        out = top * (1 - fy) + bot * fy
        ox = np.maximum(np.maximum(-p[..., 0], p[..., 0] - (w - 1)), 0.0)
        oy = np.maximum(np.maximum(-p[..., 1], p[..., 1] - (h - 1)), 0.0)
        return out + np.hypot(ox, oy) * self.res


class Scene:
    """Geometry and look-ups of one scenario."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.lanes: dict[str, LaneGeom] = {}
        for lane in scenario.lanes:
            try:
                center = Polyline(np.asarray(lane.centerline, dtype=float))
            except ValueError:
                raise EngineError(f"lane '{lane.id}' has a centerline with fewer than two distinct points") from None
            left, right = np.asarray(lane.left, dtype=float), np.asarray(lane.right, dtype=float)
            poly = shapely.make_valid(Polygon(np.concatenate([left, right[::-1]])))
            if poly.is_empty or poly.area < 1e-3:
                raise EngineError(f"lane '{lane.id}' has boundaries that enclose no area")
            self.lanes[lane.id] = LaneGeom(
                lane.id, center, left, right, poly, float(lane.speed_limit), tuple(lane.successors), lane.left_neighbor, lane.right_neighbor
            )
        self._ids = list(self.lanes)
        self._tree = STRtree([self.lanes[i].polygon for i in self._ids])
        self.route_path, self.route_speed = self._build_route()
        self.areas = [shapely.make_valid(Polygon(np.asarray(a, dtype=float))) for a in scenario.areas]
        self.drivable = shapely.unary_union([lane.polygon for lane in self.lanes.values()] + self.areas).buffer(0.0)
        shapely.prepare(self.drivable)

    # Route -----------------------------------------------------------------------------------
    def _build_route(self) -> tuple[Polyline, np.ndarray]:
        """The route's reference line (lane changes blended in) and speed limit per metre of it."""
        route = self.scenario.route
        points = [self.lanes[route[0]].center.points]
        limits = [np.full(len(points[0]), self.lanes[route[0]].speed_limit)]
        for a, b in zip(route, route[1:]):
            lb = self.lanes[b]
            if b in self.lanes[a].successors:
                points.append(lb.center.points[1:])
                limits.append(np.full(len(lb.center.points) - 1, lb.speed_limit))
                continue
            acc = Polyline(np.concatenate(points))
            lane_a_len = self.lanes[a].center.length
            start = max(acc.length - lane_a_len, acc.length - BLEND_LEN - 15.0, 0.0)
            end = min(start + BLEND_LEN, acc.length)
            keep = acc.s < start
            s_blend = np.arange(start, end, 1.0)
            pa, _ = acc.interpolate(s_blend)
            sb, _ = lb.center.project(pa)
            pb, _ = lb.center.interpolate(sb)
            u = (s_blend - start) / max(end - start, 1e-6)
            w = (3 * u**2 - 2 * u**3)[:, None]
            blend = (1 - w) * pa + w * pb
            s_after = lb.center.project(blend[-1:])[0][0] if len(blend) else 0.0
            rest = lb.center.points[lb.center.s > s_after + 0.5]
            lim_acc = np.concatenate(limits)
            points = [acc.points[keep], blend, rest]
            limits = [lim_acc[: keep.sum()] if len(lim_acc) >= keep.sum() else np.full(keep.sum(), lim_acc[-1]),
                      np.full(len(blend), lb.speed_limit), np.full(len(rest), lb.speed_limit)]
        pts = np.concatenate(points)
        lim = np.concatenate(limits)
        try:
            path = Polyline(pts)
        except ValueError:
            raise EngineError("the route is unreachable: its lanes do not form a line") from None
        # Polyline drops duplicate points: resample the limits onto its vertices by nearest index.
        s_src = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(pts, axis=0), axis=1))])
        step = np.arange(0.0, path.length + 1.0, 1.0)
        speed = lim[np.clip(np.searchsorted(s_src, step), 0, len(lim) - 1)]
        return path, speed

    def with_route(self, route: tuple[str, ...]) -> "Scene":
        """The same map with another route: lane geometry, drivable area and its grid are shared,
        only the route line is rebuilt (recorded data gives every vehicle of a scene its own)."""
        for lane_id in route:
            if lane_id not in self.lanes:
                raise EngineError(f"the route names lane '{lane_id}', which the scene does not have")
        other = copy.copy(self)
        other.scenario = replace(self.scenario, route=tuple(route))
        other.route_path, other.route_speed = other._build_route()
        return other

    def route_speed_limit(self, s: np.ndarray) -> np.ndarray:
        return self.route_speed[np.clip(np.asarray(s, dtype=float).astype(int), 0, len(self.route_speed) - 1)]

    # Lanes -----------------------------------------------------------------------------------
    def lane_path(self, lane_ids: tuple[str, ...] | list[str]) -> Polyline:
        pts = [self.lanes[lane_ids[0]].center.points]
        for lid in lane_ids[1:]:
            pts.append(self.lanes[lid].center.points[1:])
        return Polyline(np.concatenate(pts))

    def lanes_at(self, xy: np.ndarray) -> list[str]:
        """Ids of the lanes whose area contains the point."""
        idx = self._tree.query(shapely.points(xy), predicate="intersects")
        return [self._ids[i] for i in np.atleast_1d(idx)]

    def lanes_touching(self, polygon) -> list[str]:
        idx = self._tree.query(polygon, predicate="intersects")
        return [self._ids[i] for i in np.atleast_1d(idx)]

    def closest_lane(self, xy: np.ndarray, heading: float | None = None) -> str:
        """The lane whose centerline is nearest (with a heading penalty when a heading is given)."""
        best, best_cost = self._ids[0], np.inf
        cand = self.lanes_at(xy) or self._ids
        for lid in cand:
            lane = self.lanes[lid]
            s, d = lane.center.project(np.asarray(xy, dtype=float)[None])
            cost = abs(float(d[0]))
            s0 = float(s[0])
            if s0 < -2.0 or s0 > lane.center.length + 2.0:
                cost += 50.0
            if heading is not None:
                cost += 5.0 * abs(float(wrap_angle(lane.center.heading_at(np.clip(s0, 0, lane.center.length)) - heading)))
            if cost < best_cost:
                best, best_cost = lid, cost
        return best

    def speed_limit_at(self, xy: np.ndarray, heading: float) -> float:
        return self.lanes[self.closest_lane(xy, heading)].speed_limit

    def default_agent_route(self, agent: Agent, max_length: float = 600.0) -> tuple[str, ...]:
        """The lane an agent is on, then first successors, up to ``max_length`` metres."""
        x, y, h, _ = agent.history[-1]
        lid = self.closest_lane(np.array([x, y]), h)
        route, total = [lid], self.lanes[lid].center.length
        while total < max_length and self.lanes[route[-1]].successors:
            nxt = self.lanes[route[-1]].successors[0]
            if nxt in route:
                break
            route.append(nxt)
            total += self.lanes[nxt].center.length
        return tuple(route)

    # Drivable area ---------------------------------------------------------------------------
    @cached_property
    def sdf(self) -> SignedDistanceGrid:
        from PIL import Image, ImageDraw
        from scipy.ndimage import distance_transform_edt

        minx, miny, maxx, maxy = self.drivable.bounds
        margin = 15.0
        minx, miny, maxx, maxy = minx - margin, miny - margin, maxx + margin, maxy + margin
        res = GRID_RES
        while (maxx - minx) * (maxy - miny) / res**2 > GRID_MAX_CELLS:
            res *= 1.5
        w, h = int(np.ceil((maxx - minx) / res)) + 1, int(np.ceil((maxy - miny) / res)) + 1
        image = Image.new("L", (w, h), 0)
        draw = ImageDraw.Draw(image)
        origin = np.array([minx, miny])
        for shape in [lane.polygon for lane in self.lanes.values()] + self.areas:
            for geom in getattr(shape, "geoms", [shape]):
                if geom.geom_type != "Polygon":
                    continue
                pix = (np.asarray(geom.exterior.coords) - origin) / res
                draw.polygon([tuple(p) for p in pix], fill=255)
        inside = np.asarray(image) > 0
        outside_d = distance_transform_edt(~inside) * res
        inside_d = distance_transform_edt(inside) * res
        values = np.where(inside, -inside_d + 0.5 * res, outside_d - 0.5 * res).astype(np.float32)
        return SignedDistanceGrid(origin, res, values)

    def distance_outside(self, xy: np.ndarray) -> np.ndarray:
        """Exact distance (m) of points outside the drivable area; 0 inside (shapely)."""
        pts = shapely.points(np.asarray(xy, dtype=float).reshape(-1, 2))
        return shapely.distance(self.drivable, pts).reshape(np.asarray(xy).shape[:-1])

    @cached_property
    def bounds(self) -> tuple[float, float, float, float]:
        return tuple(float(v) for v in self.drivable.bounds)  # type: ignore[return-value]
