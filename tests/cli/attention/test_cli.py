"""`workbench attention ...`: stats, exports (snippets that really reproduce the mask), conversion
from dense masks, a tiny benchmark, and one `error:` line with exit 2 for every user mistake."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from engines.attention import build, to_dense


def _ok(out):
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _error(out, fragment: str) -> None:
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert lines[-1].startswith("error:") and fragment in lines[-1], out.stderr
    assert "Traceback" not in out.stderr


def test_masks_and_stats(cli) -> None:
    data = _ok(cli("attention", "masks", "--n", "4096", "--json"))
    assert len(data["masks"]) == 12 and data["masks"]["sliding_window"]["params"]["window"]["default"] == 512
    stats = _ok(cli("attention", "stats", "--mask", "causal_document", "--n", "8192", "--json"))["stats"]
    assert stats["rho"] == pytest.approx(3552 / 4096) and stats["flashmask_bytes"] == 4 * 8192


def test_exports_by_suffix_and_format(cli, tmp_path: Path) -> None:
    args = ("attention", "export", "--mask", "prefix_document", "--n", "96", "--param", "docs=1,2", "--json")
    for name, extra in (("v.npy", ()), ("v.json", ()), ("m.png", ()), ("p.py", ()), ("f.py", ("--format", "flex")), ("d.npy", ("--format", "dense"))):
        _ok(cli(*args, "--out", str(tmp_path / name), *extra))
    mask = build("prefix_document", 96, {"docs": "1,2"})
    np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), mask.indices)
    assert json.loads((tmp_path / "v.json").read_text())["startend_row_indices"] == mask.indices.tolist()
    np.testing.assert_array_equal(np.load(tmp_path / "d.npy"), to_dense(mask))
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_flex_snippet_mask_mod_reproduces_the_mask(cli, tmp_path: Path) -> None:
    from torch.nn.attention.flex_attention import create_mask

    for name, n in (("global_sliding", 80), ("qk_sparse", 70)):
        target = tmp_path / f"{name}.py"
        _ok(cli("attention", "export", "--mask", name, "--n", str(n), "--format", "flex", "--out", str(target), "--json"))
        scope: dict = {"__name__": "snippet"}
        exec(compile(target.read_text(), str(target), "exec"), scope)
        dense = create_mask(scope["mask_mod"], 1, 1, n, n, device="cpu")[0, 0].numpy()
        np.testing.assert_array_equal(dense, to_dense(build(name, n))[0, 0])


def test_paddle_snippet_carries_the_exact_vectors(cli, tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "p.py"
    _ok(cli("attention", "export", "--mask", "causal_blockwise", "--n", "300", "--out", str(target), "--json"))
    fake = types.ModuleType("paddle")
    fake.to_tensor = lambda a, dtype=None: np.asarray(a)
    fa = types.ModuleType("paddle.nn.functional.flash_attention")
    fa.flashmask_attention = lambda q, k, v, startend_row_indices, causal: (startend_row_indices, causal)
    for mod, obj in (
        ("paddle", fake),
        ("paddle.nn", types.ModuleType("paddle.nn")),
        ("paddle.nn.functional", types.ModuleType("paddle.nn.functional")),
        ("paddle.nn.functional.flash_attention", fa),
    ):
        monkeypatch.setitem(sys.modules, mod, obj)
    scope: dict = {"__name__": "snippet"}
    exec(compile(target.read_text(), str(target), "exec"), scope)
    indices, causal = scope["attention"](None, None, None)
    mask = build("causal_blockwise", 300)
    np.testing.assert_array_equal(indices, mask.indices)
    assert causal is True


def test_from_dense_round_trip_and_three_gaps(cli, tmp_path: Path) -> None:
    dense = to_dense(build("document", 40))[0, 0]
    np.save(tmp_path / "dense.npy", dense)
    data = _ok(cli("attention", "from-dense", str(tmp_path / "dense.npy"), "--out", str(tmp_path / "v.json"), "--json"))
    assert data["causal"] is False and data["c"] == 2
    bad = np.ones((10, 10), dtype=bool)
    bad[[1, 4, 7], 3] = False
    np.save(tmp_path / "bad.npy", bad)
    _error(cli("attention", "from-dense", str(tmp_path / "bad.npy"), "--out", str(tmp_path / "x.json")), "column 3 has 3 masked gaps")
    assert not (tmp_path / "x.json").exists()


def test_vectors_files_with_bad_intervals(cli, tmp_path: Path) -> None:
    inverted = {"startend_row_indices": [[[[5, 3]] + [[32, 32]] * 31]], "causal": True, "n_q": 32}
    (tmp_path / "inv.json").write_text(json.dumps(inverted))
    _error(cli("attention", "stats", "--vectors", str(tmp_path / "inv.json")), "column 0: LTS=5 > LTE=3")
    out_of_range = {"startend_row_indices": [[[[32]] * 7 + [[40]] + [[32]] * 24]], "causal": True, "n_q": 32}
    (tmp_path / "oor.json").write_text(json.dumps(out_of_range))
    _error(cli("attention", "stats", "--vectors", str(tmp_path / "oor.json")), "column 7: LTS=40 is outside the rows 0..32")
    (tmp_path / "junk.json").write_text("{not json")
    _error(cli("attention", "stats", "--vectors", str(tmp_path / "junk.json")), "junk.json is not valid JSON (line 1, column 2")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    _error(cli("attention", "stats", "--vectors", str(tmp_path / "deep.json")), "deep.json is not valid JSON here")
    (tmp_path / "junk.npy").write_bytes(b"random bytes, no .npy header")  # numpy would take it for a pickle
    _error(cli("attention", "stats", "--vectors", str(tmp_path / "junk.npy")), "junk.npy is not a NumPy .npy array file")
    _error(cli("attention", "from-dense", str(tmp_path / "junk.npy"), "--out", str(tmp_path / "v.json")), "is not a NumPy .npy array")


@pytest.mark.parametrize(
    "args,fragment",
    [
        (("stats", "--mask", "nope", "--n", "64"), "unknown mask 'nope'"),
        (("stats", "--mask", "sliding_window", "--n", "64", "--param", "window=-3"), "window=-3 is out of range"),
        (("stats", "--mask", "causal"), "--mask needs --n"),
        (("stats", "--mask", "causal", "--n", "5000000"), "sequence length 5000000"),
        (("export", "--mask", "causal", "--n", "20000", "--format", "dense", "--out", "/tmp/never.npy"), "too large to materialise"),
        (("export", "--mask", "causal", "--n", "64", "--out", "/tmp/never.txt"), "cannot tell what to write"),
        (("bench", "--mask", "causal", "--n", "64", "--backends", "fast"), "unknown backend(s) fast"),
        (("bench", "--mask", "causal", "--mask", "full", "--n", "64", "--param", "x=1"), "--param needs exactly one --mask"),
    ],
)
def test_user_mistakes_are_one_error_line(cli, args, fragment: str) -> None:
    _error(cli("attention", *args), fragment)


def test_tiny_bench_json_has_the_table_and_goals(cli, tmp_path: Path) -> None:
    out = cli(
        "attention",
        "bench",
        "--mask",
        "causal_document",
        "--n",
        "256",
        "--heads",
        "2",
        "--dim",
        "16",
        "--repeats",
        "2",
        "--backends",
        "sdpa_dense,blocksparse",
        "--csv",
        str(tmp_path / "t.csv"),
        "--json",
    )
    data = _ok(out)
    case = data["report"]["cases"][0]
    assert case["name"] == "causal_document" and [r["backend"] for r in case["rows"]] == ["sdpa_dense", "blocksparse"]
    row = case["rows"][1]
    assert row["ms"] > 0 and row["max_error"] < 1e-5 and row["full_ms"] > 0 and row["speedup_vs_dense"] > 0
    assert "causal_document" in data["goals"]["masks"]
    assert (tmp_path / "t.csv").read_text().count("\n") == 3


def test_npy_vectors_read_their_mode_from_c_or_the_flag(cli, tmp_path: Path) -> None:
    """A C=2 .npy was read as non-causal without a word (rho 1.0000, "ideal speed-up 1000000000.00x")."""
    path = tmp_path / "qk.npy"
    _ok(cli("attention", "export", "--mask", "qk_sparse", "--n", "1024", "--out", str(path), "--json"))
    _error(cli("attention", "stats", "--vectors", str(path)), "holds C=2 vectors")
    causal = _ok(cli("attention", "stats", "--vectors", str(path), "--causal", "--json"))
    assert causal["stats"]["causal"] is True and causal["stats"]["rho"] < 1.0
    assert _ok(cli("attention", "stats", "--vectors", str(path), "--no-causal", "--json"))["stats"]["causal"] is False
    np.save(tmp_path / "c1.npy", np.full((64, 1), 64, dtype=np.int32))
    assert _ok(cli("attention", "stats", "--vectors", str(tmp_path / "c1.npy"), "--json"))["stats"]["causal"] is True
    hidden = tmp_path / "hidden.npy"
    np.save(hidden, np.stack([np.zeros(256), np.full(256, 256)], axis=1).astype(np.int32))
    out = cli("attention", "stats", "--vectors", str(hidden), "--no-causal")
    assert out.returncode == 0 and "ideal speed-up all tiles skipped" in out.stdout and "1000000000" not in out.stdout
