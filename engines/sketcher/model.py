"""The edit model: a small CNN over [target, current, |target - current|] whose vector conditions
a small transformer over ``program <edit> <pos i> replacement <end>``: the program tokens see each
other both ways (a prefix), the edit is decoded causally.

The position is chosen by a pointer head (attention of the ``<edit>`` state over the program's
token states), so ``<pos i>`` names a node of the current program directly. A value head on the
``<edit>`` state predicts how many edits remain (log scale). Imports torch: load it lazily.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .vocab import CATEGORY_TOKENS, NUM0, POS, VOCAB_SIZE

IMAGE_SIZE = 32  # the model sees 64x64 renders averaged down to 32x32 (one pixel per unit)
MAX_CONTEXT = 96  # longest program (tokens) the model edits: 16 primitives and more
MAX_LEN = MAX_CONTEXT + 20


@dataclass(frozen=True)
class ModelConfig:
    d_model: int = 96
    layers: int = 3
    heads: int = 4
    channels: tuple[int, ...] = (24, 48, 96)

    def to_dict(self) -> dict:
        return asdict(self)


def prefix_causal_mask(lengths: torch.Tensor, n: int) -> torch.Tensor:
    """(B, 1, n, n) attention mask: causal, except that program tokens [0, L) see each other."""
    idx = torch.arange(n, device=lengths.device)
    causal = idx[None, :] <= idx[:, None]
    in_prefix = idx[None, :] < lengths[:, None]  # (B, n)
    return (causal[None] | (in_prefix[:, :, None] & in_prefix[:, None, :]))[:, None]


def category_mask_table() -> torch.Tensor:
    """(categories, vocab) additive mask: 0 where the grammar allows a token, -inf elsewhere."""
    table = torch.full((len(CATEGORY_TOKENS), VOCAB_SIZE), float("-inf"))
    for cat, tokens in CATEGORY_TOKENS.items():
        table[cat, list(tokens)] = 0.0
    return table


class ImageEncoder(nn.Module):
    """Target, current and their difference (3 x 32 x 32, grey levels) to one conditioning vector,
    plus the intermediate 8x8 feature map that program tokens read at their shape's centre."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        c_in = 5  # target, current, |difference|, and x / y coordinate planes (CoordConv)
        for i, c in enumerate(cfg.channels):
            layers += [nn.Conv2d(c_in, c, 4 if i == 0 else 3, stride=2, padding=1), nn.GroupNorm(8, c), nn.GELU()]
            if i == 1:
                layers += [nn.Conv2d(c, c, 3, padding=1), nn.GroupNorm(8, c), nn.GELU()]
            c_in = c
        self.stem = nn.Sequential(*layers[:9])  # to the 8x8 map that program tokens look up
        self.rest = nn.Sequential(*layers[9:])
        side = IMAGE_SIZE // 2 ** len(cfg.channels)
        self.proj = nn.Linear(c_in * side * side, cfg.d_model)

        ramp = torch.linspace(-1.0, 1.0, IMAGE_SIZE)
        self.register_buffer("coords", torch.stack([ramp.expand(IMAGE_SIZE, -1), ramp[:, None].expand(-1, IMAGE_SIZE)]), persistent=False)

    def forward(self, target: torch.Tensor, current: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The conditioning vector (B, d) and the 8x8 feature map (B, C, 8, 8)."""
        x = torch.stack([target, current, (target - current).abs()], dim=1) * 2 - 1
        x = torch.cat([x, self.coords.expand(x.shape[0], -1, -1, -1)], dim=1)
        fmap = self.stem(x)
        return self.proj(self.rest(fmap).flatten(1)), fmap


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.heads = cfg.heads
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(), nn.Linear(4 * cfg.d_model, cfg.d_model))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, cache: KVCache | None = None, layer: int = 0):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if cache is not None:
            k, v = cache.append(layer, k, v)
        if cache is not None and t == 1:  # one decoding step: plain maths beats the fused kernel here
            scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
            y = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)
        x = x + self.out(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class KVCache:
    """Preallocated keys and values for incremental decoding (no copy of the past per step)."""

    def __init__(self, layers: int, rows: int, heads: int, capacity: int, head_dim: int) -> None:
        self.k = torch.zeros(layers, rows, heads, capacity, head_dim)
        self.v = torch.zeros(layers, rows, heads, capacity, head_dim)
        self.length = 0
        self._pending = 0

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t = k.shape[2]
        end = self.length + t
        self.k[layer, :, :, self.length : end] = k
        self.v[layer, :, :, self.length : end] = v
        self._pending = t
        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]

    def advance(self) -> None:
        self.length += self._pending
        self._pending = 0

    def repeat_rows(self, k: int, capacity: int) -> KVCache:
        """A cache with every row repeated k times (one copy per proposal), room for ``capacity``."""
        layers, rows, heads, _, hd = self.k.shape
        out = KVCache(layers, rows * k, heads, capacity, hd)
        out.k[:, :, :, : self.length] = self.k[:, :, :, : self.length].repeat_interleave(k, dim=1)
        out.v[:, :, :, : self.length] = self.v[:, :, :, : self.length].repeat_interleave(k, dim=1)
        out.length = self.length
        return out


class EditModel(nn.Module):
    def __init__(self, cfg: ModelConfig = ModelConfig()) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.encoder = ImageEncoder(cfg)
        self.tok = nn.Embedding(VOCAB_SIZE, d)
        self.magnitude = nn.Linear(1, d, bias=False)  # numbers also get a direction scaled by their value
        self.ground = nn.Linear(cfg.channels[1], d)  # image features where a token's primitive sits
        self.pos = nn.Embedding(MAX_LEN, d)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, VOCAB_SIZE, bias=False)
        self.ptr_q = nn.Linear(d, d)
        self.ptr_k = nn.Linear(d, d)
        self.differs = nn.Linear(d, 1)  # per program token: does this node differ from the target's?
        self.value = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, 1))
        self.register_buffer("cat_mask", category_mask_table(), persistent=False)

    def embed(
        self,
        tokens: torch.Tensor,
        positions: torch.Tensor,
        pointer: torch.Tensor,
        pointed: torch.Tensor,
        image: tuple[torch.Tensor, torch.Tensor],
        anchors: torch.Tensor,
    ) -> torch.Tensor:
        """Token + position + image vector (+ the image features at the token's primitive, where
        ``anchors`` (B, T, 3) holds its centre in [-1, 1] and a 0/1 flag); a ``<pos i>`` token also
        carries node i's token and place."""
        vector, fmap = image
        x = self.tok(tokens) + self.pos(positions) + vector[:, None, :] + self._magnitude(tokens)
        if bool(anchors[..., 2].any()):
            looked = F.grid_sample(fmap, anchors[:, :, None, :2], align_corners=False)[..., 0].transpose(1, 2)
            x = x + self.ground(looked) * anchors[..., 2:]
        is_ptr = (tokens == POS).unsqueeze(-1)
        extra = self.tok(pointed) + self.pos(pointer.clamp(min=0))
        return x + torch.where(is_ptr, extra, torch.zeros_like(extra))

    def _magnitude(self, tokens: torch.Tensor) -> torch.Tensor:
        value = (tokens - NUM0).clamp(0, 15).float() / 15.0
        is_num = ((tokens >= NUM0) & (tokens < NUM0 + 16)).float()
        return self.magnitude((value * is_num).unsqueeze(-1))

    def run(self, x: torch.Tensor, mask: torch.Tensor | None, cache: KVCache | None = None) -> torch.Tensor:
        for i, block in enumerate(self.blocks):
            x = block(x, mask, cache, i)
        if cache is not None:
            cache.advance()
        return self.ln(x)

    def new_cache(self, rows: int, capacity: int) -> KVCache:
        return KVCache(self.cfg.layers, rows, self.cfg.heads, capacity, self.cfg.d_model // self.cfg.heads)

    def pointer_logits(self, query: torch.Tensor, keys: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """query (B, d), keys (B, L, d), valid (B, L) -> (B, L) logits over program nodes."""
        scores = torch.einsum("bd,bld->bl", self.ptr_q(query), self.ptr_k(keys)) / math.sqrt(query.shape[-1])
        return scores.masked_fill(~valid, float("-inf"))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def images_to_tensor(images, device: torch.device) -> torch.Tensor:
    """(B, S, S) bool numpy masks (S a multiple of 32) -> (B, 32, 32) float coverage."""
    import numpy as np

    b, s, _ = images.shape
    f = s // IMAGE_SIZE
    grey = np.asarray(images, dtype=np.float32).reshape(b, IMAGE_SIZE, f, IMAGE_SIZE, f).mean(axis=(2, 4))
    return torch.from_numpy(grey).to(device)
