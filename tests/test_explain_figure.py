"""autopad/explain_figure.py: the bank map as a matplotlib figure (no pyplot), its title and outlines, and the
PNG written from it (valid, atomic, never through a symlink)."""

from __future__ import annotations

import sys

import pytest

from autopad.explain import parse_pattern
from autopad.explain_figure import bank_map_figure, explain_png
from autopad.layouts import Padded

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_png_is_written_and_valid(tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.image import imread

    pyplot_before = "matplotlib.pyplot" in sys.modules
    out = explain_png(Padded(32, 32, 4, pad=1), parse_pattern("column", 32, 32, 4), tmp_path / "bank.png")
    assert out == tmp_path / "bank.png"
    data = out.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 10_000
    image = imread(out)
    assert image.ndim == 3 and image.shape[0] > 300 and image.shape[1] > 300
    assert ("matplotlib.pyplot" in sys.modules) == pyplot_before  # no pyplot, no global backend switch


@pytest.mark.parametrize(
    "pad,wave,degree,touched", [(0, 32, "32x", "1 bank touched"), (1, 1, "1x", "32 banks")]
)
def test_png_title_and_outlines(pad, wave, degree, touched):
    pytest.importorskip("matplotlib")
    from matplotlib.patches import Rectangle

    fig = bank_map_figure(Padded(32, 32, 4, pad=pad), parse_pattern("column", 32, 32, 4))
    ax = fig.axes[0]
    title = fig.get_suptitle()
    assert f"{wave} wavefront" in title and f"-> {degree}" in title and touched in title
    outlines = [p for p in ax.patches if isinstance(p, Rectangle) and not p.get_fill()]
    assert len(outlines) == 32
    assert {int(p.get_x() + 0.5) for p in outlines} == {0}  # column 0


def test_png_is_written_atomically_and_never_through_a_symlink(tmp_path):
    pytest.importorskip("matplotlib")
    from autopad.files import UnsafePathError

    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "link.png").symlink_to(victim)
    layout, pattern = Padded(32, 32, 4), parse_pattern("column", 32, 32, 4)
    with pytest.raises(UnsafePathError):
        explain_png(layout, pattern, tmp_path / "link.png")
    assert victim.read_text() == "keep"
    out = explain_png(layout, pattern, tmp_path / "a.png")
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(FileExistsError):
        explain_png(Padded(32, 32, 4, pad=1), pattern, out, overwrite=False)
