"""Every hostile file in tests/data/hostile/ (see make_corpus.py there) through every reader, plus
cases too large to commit, generated here: a result or one EngineError sentence, never another
exception, and no code from a pickle ever runs."""

from __future__ import annotations

import io
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from .fuzz_readers import READERS, ROOT, Reader
from .test_fuzz import answers

CORPUS = sorted(p for p in (ROOT / "tests/data/hostile").iterdir() if p.suffix != ".py" and p.is_file())


def test_the_corpus_stays_small() -> None:
    assert len(CORPUS) >= 25
    assert all(p.stat().st_size <= 64 * 1024 for p in CORPUS), "keep hostile files small: generate big cases in the test"


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.name)
def test_every_hostile_file_through_every_reader(reader: Reader, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # a pickle that ran would leave its marker here
    for path in CORPUS:
        answers(reader, path.read_bytes())
    assert not (tmp_path / "workbench_hostile_marker").exists(), "a hostile pickle ran code"


def _deflate_bomb() -> bytes:
    """An .npz whose 8 MB of zeros deflate to a few KB, under a header that claims 2.4 TB."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": (10**11, 3)})
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("points.npy", "w", force_zip64=True) as member:
            member.write(buf.getvalue())
            zeros = bytes(1 << 20)
            for _ in range(8):
                member.write(zeros)
    data = out.getvalue()
    assert len(data) < 64 * 1024
    return data


GENERATED = {
    "deflate bomb .npz": _deflate_bomb,
    "200k-deep JSON": lambda: b"[" * 200_000 + b"]" * 200_000,
    "a million tiny XML elements": lambda: b"<commonRoad>" + b"<a/>" * 1_000_000 + b"</commonRoad>",
    "4 MB of one text line": lambda: b"1 " * 2_000_000,
    "zlib of zeros as a PNG": lambda: b"\x89PNG\r\n\x1a\n" + zlib.compress(bytes(4 << 20)),
}


@pytest.mark.parametrize("case", list(GENERATED))
def test_generated_hostile_cases(case: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = GENERATED[case]()
    for reader in READERS:
        answers(reader, data)
