"""`workbench attention ...`: mask statistics, exports, conversion from dense masks, and the benchmark."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engines.core import CancelToken, EngineError, ProgressFn

from .common import add_command, add_group, add_record_flag, cli_job, existing_file, output, output_file


def register(sub: argparse._SubParsersAction) -> None:
    group = add_group(sub, "attention", "FlashMask attention masks: design, export, and time them")

    masks = add_command(group, "masks", cmd_masks, "list the mask library and each mask's parameters")
    masks.add_argument("--n", type=int, default=8192, help="length the defaults are shown for (default 8192)")

    stats = add_command(group, "stats", cmd_stats, "rho, density and memory of a mask")
    _mask_args(stats)
    stats.add_argument("--block", type=int, default=128, help="tile size for rho (default 128)")

    export = add_command(group, "export", cmd_export, "write a mask as .npy/.json vectors, a .png, or a Python snippet")
    _mask_args(export)
    export.add_argument("--out", required=True, type=output_file, help="file to write (.npy, .json, .png or .py)")
    export.add_argument(
        "--format",
        choices=("npy", "json", "png", "paddle", "flex", "dense"),
        help="what to write (default: from the suffix; .py is the Paddle snippet; dense: the boolean N x N mask as .npy)",
    )

    convert = add_command(group, "from-dense", cmd_from_dense, "turn a boolean dense mask (.npy, True = may attend) into FlashMask vectors")
    convert.add_argument("dense", type=existing_file, help="boolean .npy of shape [N_q, N_k] or [B, H, N_q, N_k]")
    convert.add_argument("--out", required=True, type=output_file, help="vectors to write (.json or .npy)")
    convert.add_argument("--causal", choices=("auto", "yes", "no"), default="auto", help="mode of the result (default: pick)")

    bench = add_command(group, "bench", cmd_bench, "time the CPU backends on library masks (interleaved repeats, ratios, goals)")
    bench.add_argument("--mask", action="append", help="library mask (repeatable; default: every mask)")
    bench.add_argument("--param", action="append", default=[], metavar="K=V", help="mask parameter (one --mask only)")
    bench.add_argument("--n", type=int, default=8192, help="sequence length (default 8192)")
    bench.add_argument("--heads", type=int, default=8)
    bench.add_argument("--dim", type=int, default=64)
    bench.add_argument("--batch", type=int, default=1)
    bench.add_argument("--backends", default="sdpa_dense,flex,blocksparse", help="comma-separated (default: sdpa_dense,flex,blocksparse)")
    bench.add_argument("--repeats", type=int, default=5, help="timed repeats per backend and mask (default 5)")
    bench.add_argument("--warmup", type=int, default=1)
    bench.add_argument("--threads", type=int, default=0, help="torch threads (default: every core)")
    bench.add_argument("--csv", type=output_file, help="also write the table as CSV")
    add_record_flag(bench)


def _mask_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mask", help="library mask name (see `workbench attention masks`)")
    parser.add_argument("--param", action="append", default=[], metavar="K=V", help="mask parameter, e.g. window=512")
    parser.add_argument("--n", type=int, help="sequence length (library masks)")
    parser.add_argument("--vectors", type=existing_file, help="or: startend_row_indices from a .json or .npy file")
    parser.add_argument(
        "--causal",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="with --vectors: the mask is (--causal) or is not (--no-causal) causal; needed for a .npy with C=2 columns "
        "(default: a .json says it, a .npy with C=1 is causal and C=4 is not)",
    )


def _params(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise EngineError(f"--param {pair!r} must look like name=value")
        out[key.strip()] = value.strip()
    return out


def _load_mask(args: argparse.Namespace):
    """(name, params, FlashMask) from --mask/--n/--param or from --vectors."""
    from engines.attention import library
    from engines.attention.export import load_vectors

    if args.vectors is not None:
        if args.mask:
            raise EngineError("give either --mask or --vectors, not both")
        return args.vectors.stem, {}, load_vectors(args.vectors, args.causal)
    if not args.mask:
        raise EngineError("say which mask: --mask NAME --n N, or --vectors FILE")
    if args.n is None:
        raise EngineError("--mask needs --n (the sequence length)")
    params = library.resolve_params(args.mask, args.n, _params(args.param))
    return args.mask, params, library.mask_spec(args.mask).builder(args.n, **params)


def cmd_masks(args: argparse.Namespace) -> None:
    from engines.attention import library

    library.check_length(args.n)
    data = {
        name: {
            "title": spec.title,
            "description": spec.description,
            "params": {p.name: {"default": p.default(args.n), "kind": p.kind, "help": p.help} for p in spec.params},
        }
        for name, spec in library.MASKS.items()
    }
    lines = []
    for name, entry in data.items():
        params = ", ".join(f"{k}={v['default']}" for k, v in entry["params"].items())
        lines.append(f"{name:17} {entry['description']}" + (f"  [{params}]" if params else ""))
    output(args, {"n": args.n, "masks": data}, "\n".join(lines))


def cmd_stats(args: argparse.Namespace) -> None:
    from engines.attention import mask_stats

    name, params, mask = _load_mask(args)
    if args.block < 1:
        raise EngineError("--block must be positive")
    stats = mask_stats(mask, args.block, args.block)
    data = {"mask": name, "params": params, "description": mask.describe(), "stats": stats}
    human = (
        f"{name}: {mask.describe()}\n"
        f"rho {stats.rho:.4f} ({stats.tiles_masked} of {stats.tiles} tiles of {args.block}x{args.block} skipped, "
        f"{stats.tiles_partial} partial), ideal speed-up {stats.ideal_speedup_text}, density {stats.density:.4f}\n"
        f"memory: FlashMask {stats.flashmask_bytes} B (+{stats.minmax_bytes} B min/max), dense {stats.dense_bytes} B, "
        f"Flex BlockMask {stats.blockmask_bytes} B"
    )
    output(args, data, human)


def cmd_export(args: argparse.Namespace) -> None:
    from engines.attention.export import export_mask

    with cli_job(args, "export ", torch=False) as (progress, cancel):
        name, params, mask = _load_mask(args)
        progress(0.5, f"writing {args.out.name}")
        path = export_mask(mask, args.out, args.format, name, params)
        progress(1.0, "done")
    output(args, {"out": str(path), "mask": name, "params": params, "description": mask.describe()}, f"wrote {path}")


def cmd_from_dense(args: argparse.Namespace) -> None:
    from engines.attention.export import export_mask, load_dense

    causal = {"auto": None, "yes": True, "no": False}[args.causal]
    mask = load_dense(args.dense, causal)
    if args.out.suffix.lower() not in (".json", ".npy"):
        raise EngineError("--out must be a .json or .npy file")
    path = export_mask(mask, args.out, None, args.dense.stem)
    output(args, {"out": str(path), "description": mask.describe(), "causal": mask.causal, "c": mask.c}, f"{mask.describe()}\nwrote {path}")


def cmd_bench(args: argparse.Namespace) -> None:
    import os

    from engines.attention.bench import run_bench
    from engines.attention.export import timing_csv
    from engines.attention.params import TimingSettings
    from engines.core import write_text

    backends = tuple(b.strip() for b in args.backends.split(",") if b.strip())
    settings = TimingSettings(heads=args.heads, dim=args.dim, batch=args.batch, backends=backends, repeats=args.repeats, warmup=args.warmup)
    if args.threads < 0:
        raise EngineError("--threads must not be negative")
    with cli_job(args, "bench ", threads=args.threads or os.cpu_count() or 1) as (progress, cancel):
        result = run_bench(args.mask, args.n, _params(args.param) or None, settings, progress, cancel)
    if args.csv:
        write_text(args.csv, timing_csv(result.report))
    output(args, {"report": result.report, "goals": result.goals}, result.table)


def demo(out: Path, progress: ProgressFn, cancel: CancelToken) -> dict[str, Any]:
    """The embedded example: a 4-document causal mask at N=2048, exported and timed briefly."""
    from engines.attention import library
    from engines.attention.export import export_mask, timing_csv
    from engines.attention.params import TimingSettings
    from engines.attention.timing import time_cases
    from engines.core import write_text

    name, n = "causal_document", 2048
    params = library.resolve_params(name, n)
    mask = library.build(name, n, params)
    written = [export_mask(mask, out / f"{name}.{ext}", fmt, name, params) for ext, fmt in (("npy", "npy"), ("json", "json"), ("png", "png"))]
    written.append(export_mask(mask, out / f"{name}_paddle.py", "paddle", name, params))
    written.append(export_mask(mask, out / f"{name}_flex.py", "flex", name, params))
    report = time_cases([(name, params, mask)], TimingSettings(backends=("sdpa_dense", "blocksparse"), repeats=3), progress, cancel)
    written.append(write_text(out / "timing.csv", timing_csv(report)))
    return {"files": [str(p) for p in written], "blocksparse_ms": report.cases[0].row("blocksparse").ms}
