"""GPU benchmark, prepared for a machine with a CUDA GPU: the Triton FlashMask kernel against
compiled FlexAttention on every library mask, bf16, D=128, forward and forward+backward.

    python -m engines.attention.gpu_bench [--n 8192,16384,32768] [--heads 16] [--json out.json]

Both backends get the same tiles (the Flex BlockMask is built from the same classification), so
the comparison is kernel against kernel. Times are CUDA-event medians after warm-up; TFLOP/s are
counted per visible element (the paper's sparsity-aware count) and per dense N² as well. Goal
(spec): triton reaches at least FlexAttention's TFLOP/s on every library mask at N = 8K-32K.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any

from engines.core import EngineError

from . import library
from .blocks import mask_stats


def _time_cuda(fn, repeats: int, warmup: int) -> list[float]:
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return times


def run(ns: list[int], heads: int, dim: int, batch: int, repeats: int, warmup: int, masks: list[str]) -> dict[str, Any]:
    import torch

    from .backends import flex as flex_backend
    from .backends import triton_backend
    from .timing import sampled_error

    if not torch.cuda.is_available():
        raise EngineError("no CUDA device: the GPU benchmark needs a GPU (the CPU benchmark is `workbench attention bench`)")
    device = torch.device("cuda")
    rows = []
    for n in ns:
        gen = torch.Generator(device=device).manual_seed(0)
        q, k, v = (torch.randn(batch, heads, n, dim, device=device, dtype=torch.bfloat16, generator=gen) for _ in range(3))
        grad = torch.randn_like(q)
        for name in masks:
            mask = library.build(name, n)
            stats = mask_stats(mask, 128, 128)
            bm = flex_backend.block_mask(mask, heads, device)
            flex = flex_backend.compiled_flex()

            def tri_fwd():
                with torch.no_grad():
                    return triton_backend.attention(q, k, v, mask)

            def flex_fwd():
                with torch.no_grad():
                    return flex(q, k, v, block_mask=bm)

            qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))

            def tri_fwd_bwd():
                out = triton_backend.attention(qg, kg, vg, mask)
                out.backward(grad)

            def flex_fwd_bwd():
                out = flex(qg, kg, vg, block_mask=bm)
                out.backward(grad)

            err_rows = {
                "triton": sampled_error(q.float(), k.float(), v.float(), mask, tri_fwd().float()),
                "flex": sampled_error(q.float(), k.float(), v.float(), mask, flex_fwd().float()),
            }
            visible = stats.visible_elements * heads * batch
            dense = batch * heads * n * n
            for backend, fwd, both in (("triton", tri_fwd, tri_fwd_bwd), ("flex", flex_fwd, flex_fwd_bwd)):
                t_fwd = statistics.median(_time_cuda(fwd, repeats, warmup))
                t_both = statistics.median(_time_cuda(both, repeats, warmup))
                rows.append(
                    {
                        "n": n,
                        "mask": name,
                        "rho": stats.rho,
                        "backend": backend,
                        "fwd_ms": t_fwd,
                        "fwd_bwd_ms": t_both,
                        # forward: 4 d flops per score element; backward: 2.5x that (5 matmuls vs 2)
                        "fwd_tflops_element": 4 * dim * visible / (t_fwd * 1e-3) / 1e12,
                        "fwd_bwd_tflops_element": 14 * dim * visible / (t_both * 1e-3) / 1e12,
                        "fwd_tflops_dense": 4 * dim * dense / (t_fwd * 1e-3) / 1e12,
                        "max_error_bf16": err_rows[backend],
                    }
                )
                print(f"{n:6} {name:17} {backend:7} fwd {t_fwd:8.2f} ms  fwd+bwd {t_both:8.2f} ms", file=sys.stderr, flush=True)
    for row in rows:
        peer = next(r for r in rows if r["n"] == row["n"] and r["mask"] == row["mask"] and r["backend"] == "flex")
        row["fwd_speedup_vs_flex"] = peer["fwd_ms"] / row["fwd_ms"]
        row["fwd_bwd_speedup_vs_flex"] = peer["fwd_bwd_ms"] / row["fwd_bwd_ms"]
    tri = [r for r in rows if r["backend"] == "triton"]
    return {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "heads": heads,
        "dim": dim,
        "batch": batch,
        "dtype": "bfloat16",
        "rows": rows,
        "goal_triton_at_least_flex_tflops": all(r["fwd_speedup_vs_flex"] >= 1.0 and r["fwd_bwd_speedup_vs_flex"] >= 1.0 for r in tri),
    }


def table(result: dict[str, Any]) -> str:
    lines = [
        f"FlashMask GPU benchmark on {result['device']}: B={result['batch']} H={result['heads']} D={result['dim']} bf16",
        f"{'N':>6} {'mask':17} {'rho':>5} {'backend':7} {'fwd ms':>8} {'TF/s':>6} {'fwd+bwd ms':>10} {'TF/s':>6} {'fwd x flex':>10} {'f+b x flex':>10} {'max err':>8}",
    ]
    for r in result["rows"]:
        lines.append(
            f"{r['n']:6} {r['mask']:17} {r['rho']:5.3f} {r['backend']:7} {r['fwd_ms']:8.2f} {r['fwd_tflops_element']:6.1f} "
            f"{r['fwd_bwd_ms']:10.2f} {r['fwd_bwd_tflops_element']:6.1f} {r['fwd_speedup_vs_flex']:10.2f} "
            f"{r['fwd_bwd_speedup_vs_flex']:10.2f} {r['max_error_bf16']:8.1e}"
        )
    lines.append(f"goal (triton >= flex everywhere): {'met' if result['goal_triton_at_least_flex_tflops'] else 'NOT met'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engines.attention.gpu_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="8192,16384,32768", help="comma-separated sequence lengths")
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--masks", default=",".join(library.MASKS), help="comma-separated library masks")
    parser.add_argument("--json", help="also write the result to this JSON file")
    args = parser.parse_args(argv)
    try:
        ns = [int(x) for x in args.n.split(",") if x.strip()]
        result = run(ns, args.heads, args.dim, args.batch, args.repeats, args.warmup, [m.strip() for m in args.masks.split(",") if m.strip()])
    except EngineError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    print(table(result))
    if args.json:
        from engines.core import write_json

        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
