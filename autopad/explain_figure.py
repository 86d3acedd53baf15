"""The bank map as a picture: a matplotlib ``Figure`` (cells shaded by bank with a cyclic colormap, the
touched cells outlined, the degree in the title) and the PNG written from it.

Why a module of its own: it is the one part of ``autopad explain`` that needs matplotlib (optional,
``pip install autopad[plot]``, imported only inside ``bank_map_figure``), and it draws from the same
computed map as the text (explain_map.py). The PNG is rendered in memory and written through
``files.write_file`` (atomic, never through a symlink).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .access import Instruction, Stacked
from .arch import Arch
from .explain_map import _build, _degree, _instructions, _n
from .files import write_file

if TYPE_CHECKING:  # matplotlib is optional and imported only when drawing
    from matplotlib.figure import Figure

__all__ = ["bank_map_figure", "explain_png"]


def bank_map_figure(
    layout: object, pattern: Sequence[Instruction] | Stacked, arch: str | Arch = "sm_90", instruction: int = 0
) -> Figure:
    """The bank map as a matplotlib ``Figure`` on an Agg canvas (no pyplot, no GUI backend touched).

    Cells are shaded by bank with a cyclic colormap of one colour per bank, padding cells are faded after a
    vertical line, the cells instruction ``instruction`` touches are outlined, and the title gives its
    banks touched, wavefronts, ideal and degree, and the whole tile's.
    """
    pattern = _instructions(pattern)
    m = _build(layout, pattern, arch, instruction)
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    a = m.arch
    rows, cols = m.banks.shape
    npad = m.pad_banks.shape[1]
    cmap = ListedColormap(matplotlib.colormaps["hsv"](np.linspace(0, 1, a.banks, endpoint=False)))
    cell = min(0.3, 14.0 / (cols + npad), 14.0 / rows)  # inches per cell: big tiles shrink, never distort
    width = max(7.0, (cols + npad) * cell + 2.6)
    height = max(4.0, rows * cell + 1.8)
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    kw = {"cmap": cmap, "vmin": -0.5, "vmax": a.banks - 0.5, "interpolation": "nearest", "aspect": "equal"}
    image = ax.imshow(m.banks, extent=(-0.5, cols - 0.5, rows - 0.5, -0.5), **kw)
    if npad:
        ax.imshow(m.pad_banks, extent=(cols - 0.5, cols + npad - 0.5, rows - 0.5, -0.5), alpha=0.3, **kw)
        ax.axvline(cols - 0.5, color="black", linewidth=1)
    ax.set_xlim(-0.5, cols + npad - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)
    small = rows <= 48 and cols + npad <= 48
    if small:
        size = max(4.0, 7.0 - 0.05 * max(rows, cols))
        for (r, c), b in np.ndenumerate(m.banks):
            ax.text(c, r, str(b), ha="center", va="center", fontsize=size,
                    fontweight="bold" if m.marked[r, c] else "normal")  # fmt: skip
        for (r, c), b in np.ndenumerate(m.pad_banks):
            ax.text(cols + c, r, str(b), ha="center", va="center", fontsize=size, color="dimgray")
    for r, c in zip(*np.nonzero(m.marked), strict=True):
        ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.0))
    _, count, wave, ideal = m.cost.per_instruction[m.index]
    ins = pattern[m.index]
    fig.suptitle(  # on the figure, not the axes, so a narrow tile does not clip it
        f"{m.title}\ninstruction {m.index} ({ins.name}): {_n(m.touched, 'bank')} touched, "
        f"{_n(wave, 'wavefront')} for ideal {ideal} -> {_degree(wave, ideal)}\n"
        f"whole tile: {m.cost.wavefronts} wavefronts, ideal {m.cost.ideal} -> "
        f"{_degree(m.cost.wavefronts, m.cost.ideal)}",
        fontsize=9,
        y=1 - 0.1 / height,
        va="top",
    )
    ax.set_xlabel("column" + (" (shaded after the line: row padding)" if npad else ""))
    ax.set_ylabel("row")
    bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    bar.set_label(f"bank (byte offset // {a.bank_bytes} % {a.banks})")
    bar.set_ticks(list(range(0, a.banks, max(1, a.banks // 8))))
    fig.subplots_adjust(left=0.7 / width, right=1 - 0.9 / width, bottom=0.6 / height, top=1 - 0.9 / height)
    return fig


def explain_png(
    layout: object,
    pattern: Sequence[Instruction] | Stacked,
    path: str | Path,
    arch: str | Arch = "sm_90",
    instruction: int = 0,
    overwrite: bool = True,
) -> Path:
    """Draw the bank map (``bank_map_figure``) to a PNG at ``path`` and return the path.

    The image is rendered in memory and written by ``files.write_file``: atomically, never through a
    symlink, and (with ``overwrite=False``) never over a different existing file. Needs matplotlib
    (``pip install autopad[plot]``).
    """
    buf = io.BytesIO()
    bank_map_figure(layout, pattern, arch, instruction).savefig(buf, format="png")
    return write_file(Path(path), buf.getvalue(), overwrite=overwrite)
