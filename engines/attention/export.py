"""What leaves (and enters) the workbench: vectors as .npy/.json, a mask PNG, timing CSV, and
ready-to-paste snippets for Paddle's ``flashmask_attention`` and a FlexAttention ``mask_mod``.

Every file is written atomically. Snippets carry the exact vectors, zlib-compressed and base64
encoded, so they reproduce the mask bit for bit at any N.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from engines.core import EngineError, json_loads, write_bytes, write_text
from engines.core.budget import check_npy

from .dense import density_image, from_dense, to_dense
from .representation import FlashMask, make_mask
from .timing import TimingReport

JSON_FORMAT = "flashmask-startend-row-indices"
PNG_MAX = 1024


# Vectors ----------------------------------------------------------------------------------
def vectors_json(mask: FlashMask, name: str = "custom", params: dict[str, Any] | None = None) -> str:
    data = {
        "format": JSON_FORMAT,
        "mask": name,
        "params": params or {},
        "causal": mask.causal,
        "n_q": mask.n_q,
        "n_k": mask.n_k,
        "columns": list(mask.column_names),
        "shape": list(mask.indices.shape),
        "startend_row_indices": mask.indices.tolist(),
    }
    return json.dumps(data, separators=(",", ":")) + "\n"


def vectors_npy(mask: FlashMask) -> bytes:
    buf = io.BytesIO()
    np.save(buf, mask.indices, allow_pickle=False)
    return buf.getvalue()


def load_vectors(path: Path, causal: bool | None = None, n_q: int | None = None) -> FlashMask:
    """A FlashMask from our .json, or from a .npy of startend_row_indices (C=2 needs ``causal``)."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            data = json_loads(path.read_text(encoding="utf-8"), path.name)
            if not isinstance(data, dict) or "startend_row_indices" not in data:
                raise EngineError(f"{path.name} is not a FlashMask JSON file (no startend_row_indices)")
            mode = data.get("causal", False) if causal is None else causal
            if not isinstance(mode, bool):
                raise EngineError(f"{path.name}: 'causal' must be true or false, got {mode!r}")
            return make_mask(np.asarray(data["startend_row_indices"]), mode, data.get("n_q", n_q))
        if suffix == ".npy":
            arr = _load_npy(path)
        else:
            raise EngineError(f"{path.name}: vectors must be a .npy or .json file")
    except (OSError, ValueError) as exc:
        raise EngineError(f"cannot read {path.name}: {exc}") from exc
    if arr.dtype == bool:
        raise EngineError(f"{path.name} holds a boolean (dense) mask: convert it with from_dense first")
    if causal is None:
        c = arr.shape[-1] if arr.ndim >= 2 else 1
        if c == 2:
            raise EngineError(
                f"{path.name} holds C=2 vectors, which are [LTS, LTE] when causal and [LTS, UTE] when not: "
                "say which (or use the .json export, which records it)"
            )
        causal = c == 1  # C=1 exists only in causal mode, C=4 only in bidirectional mode
    return make_mask(arr, causal, n_q)


def npy_needs_mode(path: Path) -> bool:
    """Whether a file is a .npy of C=2 vectors, which `load_vectors` can only read when told the
    mode. Reads the header alone; anything unreadable is False (reading it reports the problem)."""
    if path.suffix.lower() != ".npy":
        return False
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return False
    return arr.dtype != bool and arr.ndim >= 2 and arr.shape[-1] == 2


def load_dense(path: Path, causal: bool | None = None) -> FlashMask:
    """A FlashMask from a boolean .npy dense mask (True = may attend)."""
    try:
        arr = _load_npy(path)
    except (OSError, ValueError) as exc:
        raise EngineError(f"cannot read {path.name}: {exc}") from exc
    return from_dense(arr, causal)


def _load_npy(path: Path) -> np.ndarray:
    """An array from a .npy file; anything else (numpy would take it for a pickle) is refused by name."""
    with open(path, "rb") as fh:
        if fh.read(6) != b"\x93NUMPY":
            raise EngineError(f"{path.name} is not a NumPy .npy array file (it is corrupt or holds something else)")
    check_npy(path)  # the header may promise more memory than there is
    return np.load(path, allow_pickle=False)


# Pictures and tables ----------------------------------------------------------------------
def mask_png(mask: FlashMask, size: int = PNG_MAX) -> bytes:
    """The mask as a picture (visible = dark, hidden = light), downsampled to at most ``size`` px."""
    from PIL import Image

    img = density_image(mask, size, size)
    dark, light = np.array([29, 53, 87], float), np.array([241, 245, 249], float)
    rgb = (light[None, None] + img[..., None] * (dark - light)[None, None]).round().astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, "PNG")
    return buf.getvalue()


CSV_FIELDS = (
    "mask",
    "rho",
    "density",
    "backend",
    "ms_median",
    "ms_min",
    "ms_max",
    "spread",
    "tflops_dense",
    "tflops_block",
    "tflops_element",
    "max_error",
    "mask_bytes",
    "full_ms",
    "speedup_vs_dense",
    "speedup_vs_flex",
    "pct_of_ideal",
)


def timing_csv(report: TimingReport) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_FIELDS)
    for case in report.cases:
        for r in case.rows:
            writer.writerow(
                [
                    case.name,
                    f"{case.stats.rho:.6f}",
                    f"{case.stats.density:.6f}",
                    r.backend,
                    f"{r.ms:.3f}",
                    f"{r.ms_min:.3f}",
                    f"{r.ms_max:.3f}",
                    f"{r.spread:.4f}",
                    f"{r.tflops_dense:.5f}",
                    f"{r.tflops_block:.5f}",
                    f"{r.tflops_element:.5f}",
                    "" if r.max_error is None else f"{r.max_error:.3e}",
                    r.mask_bytes,
                    "" if r.full_ms is None else f"{r.full_ms:.3f}",
                    _opt(r.speedup_vs_dense),
                    _opt(r.speedup_vs_flex),
                    _opt(r.pct_of_ideal),
                ]
            )
    return out.getvalue()


def _opt(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


# Snippets ---------------------------------------------------------------------------------
def _packed(arr: np.ndarray) -> str:
    data = base64.b64encode(zlib.compress(np.ascontiguousarray(arr, dtype=np.int32).tobytes(), 9)).decode("ascii")
    return "\n".join(f'    "{data[i : i + 96]}"' for i in range(0, len(data), 96)) or '    ""'


def paddle_snippet(mask: FlashMask, name: str = "custom") -> str:
    b, h, n_k, c = mask.indices.shape
    return f'''"""{name}: {mask.describe()}. Exported by Workbench (attention panel).

Paddle layout: q/k/v are [batch, seq_len, num_heads, head_dim] in bfloat16 or float16.
"""
import base64
import zlib

import numpy as np
import paddle
from paddle.nn.functional.flash_attention import flashmask_attention

PACKED = (
{_packed(mask.indices)}
)
STARTEND_ROW_INDICES = np.frombuffer(zlib.decompress(base64.b64decode(PACKED)), dtype=np.int32).reshape({b}, {h}, {n_k}, {c})
CAUSAL = {mask.causal}
N_Q, N_K = {mask.n_q}, {mask.n_k}


def attention(q, k, v):
    """Masked attention; q [B, N_Q, heads, D], k/v [B, N_K, heads, D]."""
    indices = paddle.to_tensor(STARTEND_ROW_INDICES, dtype="int32")
    return flashmask_attention(q, k, v, startend_row_indices=indices, causal=CAUSAL)


if __name__ == "__main__":
    q = paddle.randn([{b}, N_Q, 8, 128]).astype("bfloat16")
    k = paddle.randn([{b}, N_K, 8, 128]).astype("bfloat16")
    v = paddle.randn([{b}, N_K, 8, 128]).astype("bfloat16")
    print(attention(q, k, v).shape)
'''


def flex_snippet(mask: FlashMask, name: str = "custom") -> str:
    iv = mask.intervals()
    vec = np.stack([iv.lts, iv.lte, iv.uts, iv.ute])  # [4, B, Hm, N_k]
    _, b, h, n_k = vec.shape
    bi = "b" if b > 1 else "0"
    hi = "h" if h > 1 else "0"
    causal_line = f"\n    hidden = hidden | (kv_idx > q_idx + {mask.offset})  # causal, bottom-right aligned" if mask.causal else ""
    return f'''"""{name}: {mask.describe()}. Exported by Workbench (attention panel).

A FlexAttention mask_mod equal to the FlashMask: row q_idx may not attend column kv_idx when it
lies in [LTS, LTE) or [UTS, UTE) of that column{" or kv_idx is above the causal diagonal" if mask.causal else ""}.
"""
import base64
import zlib

import numpy as np
import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

PACKED = (
{_packed(vec)}
)
LTS, LTE, UTS, UTE = torch.from_numpy(
    np.frombuffer(zlib.decompress(base64.b64decode(PACKED)), dtype=np.int32).reshape(4, {b}, {h}, {n_k}).astype(np.int64)
)
N_Q, N_K = {mask.n_q}, {mask.n_k}


def mask_mod(b, h, q_idx, kv_idx):
    hidden = ((q_idx >= LTS[{bi}, {hi}, kv_idx]) & (q_idx < LTE[{bi}, {hi}, kv_idx])) | (
        (q_idx >= UTS[{bi}, {hi}, kv_idx]) & (q_idx < UTE[{bi}, {hi}, kv_idx])
    ){causal_line}
    return ~hidden


def block_mask(batch={b}, heads={h if h > 1 else None}, device="cpu"):
    return create_block_mask(mask_mod, B=batch, H=heads, Q_LEN=N_Q, KV_LEN=N_K, device=device)


if __name__ == "__main__":
    q = torch.randn({b}, 8, N_Q, 64)
    k, v = torch.randn({b}, 8, N_K, 64), torch.randn({b}, 8, N_K, 64)
    print(torch.compile(flex_attention)(q, k, v, block_mask=block_mask()).shape)
'''


# Writing by suffix ------------------------------------------------------------------------
EXPORT_FORMATS = ("npy", "json", "png", "paddle", "flex", "dense")


def export_mask(mask: FlashMask, path: Path, fmt: str | None = None, name: str = "custom", params: dict[str, Any] | None = None) -> Path:
    """Write ``mask`` as ``fmt`` (default: from the suffix; .py means the Paddle snippet; ``dense``
    writes the boolean N_q x N_k mask as .npy)."""
    fmt = fmt or {".npy": "npy", ".json": "json", ".png": "png", ".py": "paddle"}.get(path.suffix.lower())
    if fmt not in EXPORT_FORMATS:
        raise EngineError(f"cannot tell what to write to {path.name}: use .npy, .json, .png or .py, or give a format ({', '.join(EXPORT_FORMATS)})")
    if fmt == "npy":
        return write_bytes(path, vectors_npy(mask))
    if fmt == "dense":  # the boolean [B, H, N_q, N_k] mask, refused when too large to materialise
        buf = io.BytesIO()
        np.save(buf, to_dense(mask), allow_pickle=False)
        return write_bytes(path, buf.getvalue())
    if fmt == "png":
        return write_bytes(path, mask_png(mask))
    text = {"json": lambda: vectors_json(mask, name, params), "paddle": lambda: paddle_snippet(mask, name), "flex": lambda: flex_snippet(mask, name)}[
        fmt
    ]()
    return write_text(path, text)
