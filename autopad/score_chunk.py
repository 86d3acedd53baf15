"""One chunk of units scored together: patterns' instructions -> blocks' contents -> (content, formula) pairs
-> addresses -> the model, and back to each unit's wavefronts and ideal (``autopad.score``'s inner loop).

Split from score.py (one concern a module; its docstring explains why the three levels of sharing are
exact). Here is how the chunk is worked, with its sizes for the fp16 CUDA transpose's first ranking (7,800
units of 143 patterns and 894 layouts):

* instructions (31,000 rows of 32 lanes) -> distinct ones (4,600), matched by a hash and checked exactly;
* blocks (a pattern under a layout's period: 4,000) -> their contents (an instruction moved towards (0, 0)
  by whole periods; 326,000 (block, content) entries, 4,600 contents), per period with one sort of values;
* units -> their block's contents under the unit's formula (675,000 rows) -> distinct (content, formula)
  pairs (151,000), each pair's 32 addresses from the one tile formula, and the model on the distinct
  address rows (``model.analyze_distinct``: 18,000);
* each unit's rows summed.

A first ranking pays for every fresh page of memory and every cache miss, so the large steps work on the
smallest integers that hold them, gather with ``take`` (several times faster than indexing a 2-D array with
an index array) and number their codes with tables read in small windows (the pairs: formula first, so
each unit reads one formula's row of the table).

The steps that find what is distinct (a layout's periods, distinct codes and instructions, the model's
costs of distinct address rows) live in score_distinct.py; here, ``_score_chunk`` strings them together.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .arch import Arch
from .model import distinct_rows as model_distinct_rows

# the steps that find what is distinct live in score_distinct.py; their names are importable from here as
# before (tests/test_score_chunk.py, autopad.score)
from .score_distinct import (  # noqa: F401
    _CHECK_BYTES,
    _HASH_ROWS,
    _costs,
    _distinct_instructions,
    _ids,
    _period,
    _periods,
    _PerLayout,
)
from .spec import SpecError, combine_codes, value_ranks
from .tile_addresses import _extent, _part_rows, _parts, _tile_addresses, _tile_params

__all__: list[str] = []  # autopad.score imports the underscored names below


def _score_chunk(
    patterns: list[list[tuple[str, int, np.ndarray, np.ndarray, np.ndarray]]],
    which: list[int],
    unit_layouts: list[Any],
    layout_ids: list[int],
    arch: Arch,
) -> tuple[np.ndarray, np.ndarray]:
    """(wavefronts, ideal) of units given as their pattern (an index into ``patterns``) and layout."""
    # every pattern's instructions, stacked: pattern m holds rows [start[m], end[m])
    parts = [g for groups in patterns for g in groups]
    sizes = [sum(len(g[2]) for g in groups) for groups in patterns]
    end = np.cumsum(sizes, dtype=np.int64)
    start = end - np.array(sizes, dtype=np.int64)
    if not parts:
        return np.zeros(len(which), dtype=np.int64), np.zeros(len(which), dtype=np.int64)
    kinds: dict[tuple[str, int], int] = {}
    n_part = [len(p[2]) for p in parts]
    kind = np.repeat(np.array([kinds.setdefault((p[0], p[1]), len(kinds)) for p in parts], np.int64), n_part)
    # a group of one instruction is left where it is (as a period of None leaves every instruction); so is
    # every cp.async.cg instruction: its cost depends on where each lane's chunk sits in its 128-byte row
    # against the chunk its (lane-ordered) source gives it, which a move by a layout's period can change
    # (model_cp_async_cg.py; only whole 128-byte rows are free)
    multi = np.repeat(np.array([len(p[2]) > 1 and p[0] != "cp.async.cg" for p in parts], dtype=bool), n_part)
    # the lanes in the patterns' own integer type (the CUDA transpose's: int32, half the bytes)
    rows = np.concatenate([p[2] for p in parts])
    cols = np.concatenate([p[3] for p in parts])  # (an inactive lane's column is never read below)
    counts = np.concatenate([p[4] for p in parts])
    # an instruction recurs across patterns (one tile walk under other layouts' vector widths, prefixes of
    # one sample): each distinct one's lowest active row and column, and its shape (its lanes relative to
    # them), worked out once (the fp16 CUDA transpose: 31,000 instructions, 4,600 distinct)
    uniq, inst_of = _distinct_instructions(kind * 2 + multi, rows, cols)
    u_rows = rows.take(uniq, axis=0).astype(np.int64, copy=False)
    u_cols = cols.take(uniq, axis=0).astype(np.int64, copy=False)
    active = u_rows >= 0
    big = np.iinfo(np.int64).max
    lo_r, lo_c = np.where(active, u_rows, big).min(axis=1), np.where(active, u_cols, big).min(axis=1)
    lo_r, lo_c = np.where(lo_r == big, 0, lo_r), np.where(lo_c == big, 0, lo_c)
    shape_rep, shape_of = model_distinct_rows(
        np.concatenate(
            [np.where(active, u_rows - lo_r[:, None], -1), np.where(active, u_cols - lo_c[:, None], 0)], 1
        )
    )
    n_shapes = len(shape_rep)
    # per unit: its layout (one entry per layout object) and its block: (pattern, the layout's period)
    objs = dict(zip(layout_ids, unit_layouts))  # each layout object, in order of first appearance
    number = dict(zip(objs, range(len(objs))))
    lays: list[Any] = list(objs.values())
    ul_a = np.fromiter(map(number.__getitem__, layout_ids), dtype=np.int64, count=len(layout_ids))
    # each layout's tile formula (``_tile_params``; None for any other layout) and its period
    prm: list[Any] = [_tile_params(x) for x in lays]
    periods = _PerLayout(_periods)
    per_at: dict[tuple[int, int], int] = {}  # each distinct period, numbered
    per_of = np.array(
        [per_at.setdefault(_period(x, p, periods) or (0, 0), len(per_at)) for x, p in zip(lays, prm)],
        np.int64,
    )
    # blocks numbered in order of first appearance among the units
    _, firsts, inverse = np.unique(
        np.asarray(which, dtype=np.int64) * len(per_at) + per_of[ul_a], return_index=True, return_inverse=True
    )
    order = np.argsort(firsts)
    renumber = np.empty(len(order), dtype=np.int64)
    renumber[order] = np.arange(len(order))
    ub_a, first_unit = renumber[inverse.ravel()], firsts[order]
    bm = np.asarray(which, dtype=np.int64)[first_unit]
    bp, bq = np.array(list(per_at), dtype=np.int64).reshape(-1, 2)[per_of[ul_a[first_unit]]].T
    # An instruction moved down by whole periods (a group of one instruction stays where it is, as a
    # period of None leaves every instruction) has its lowest row and column within the first period; its
    # content is its class (kind and shape) and that offset, one int64 code. Blocks of one period at a
    # time: the modulus is one number, and the temporaries stay small.
    cls, multi = kind[uniq] * n_shapes + shape_of, multi[uniq]  # (of the distinct instructions)
    r_lo, r_hi = min(0, int(lo_r.min())), max(int(lo_r.max()), int(bp.max()) - 1)
    c_lo, c_hi = min(0, int(lo_c.min())), max(int(lo_c.max()), int(bq.max()) - 1)
    dr_n, dc_n = r_hi - r_lo + 1, c_hi - c_lo + 1
    if len(kinds) * n_shapes * dr_n * dc_n >= 2**62:
        raise SpecError(f"smem_pattern: rows up to {r_hi} and columns up to {c_hi} are beyond any tile")
    sizes = end - start
    ones = bool((counts == 1).all())  # every instruction counted once (a block's count: its run's length)
    by_period: dict[tuple[int, int], list[int]] = {}
    for b, per in enumerate(zip(bp.tolist(), bq.tolist())):
        by_period.setdefault(per, []).append(b)
    # every period's code of every distinct instruction, numbered together: a content is a distinct code,
    # numbered as the codes sort, so a block's contents are found with keys of a few tens of bits (block,
    # code's number) and come out numbered (no second pass over them)
    codes = np.empty((len(by_period), len(uniq)), dtype=np.int64)
    for j, (pp, qq) in enumerate(by_period):
        dr = np.where(multi, lo_r % pp, lo_r) if pp > 0 else lo_r
        dc = np.where(multi, lo_c % qq, lo_c) if qq > 0 else lo_c
        codes[j] = (cls * dr_n + (dr - r_lo)) * dc_n + (dc - c_lo)
    g_of, g_rep = _ids(codes.ravel(), len(kinds) * n_shapes * dr_n * dc_n)  # (the fp16 transpose: 236,000
    # codes, 4,600 distinct)
    g_codes = codes.ravel().take(g_rep)
    n_g = len(g_codes)
    g_of = g_of.reshape(codes.shape).astype(np.int32 if n_g < 2**31 else np.int64, copy=False)
    del codes, g_rep
    inst_of = inst_of.astype(np.int32 if len(uniq) < 2**31 else np.int64, copy=False)
    inst_in = [inst_of[a:b] for a, b in zip(start.tolist(), end.tolist())]  # each pattern's instructions
    got: list[tuple[np.ndarray, ...]] = []  # per period: block, code's number, count
    for j, blocks in enumerate(by_period.values()):
        blocks_a = np.array(blocks, dtype=np.int64)
        ms = bm[blocks_a].tolist()  # the blocks' patterns: each block's instructions are its pattern's
        lengths = sizes[bm[blocks_a]]
        gid = g_of[j].take(np.concatenate([inst_in[m] for m in ms]))
        if len(blocks) * n_g >= 2**62:
            raise SpecError(f"smem_pattern: {len(blocks)} blocks of {n_g} contents: too many to number")
        wide = len(blocks) * n_g >= 2**31
        key = np.repeat(np.arange(0, len(blocks) * n_g, n_g, dtype=np.int64 if wide else np.int32), lengths)
        key += gid
        # a block's distinct contents and their counts: the (block, content) keys sorted (a sort of values:
        # several times faster than an argsort), counts summed over each run of equal keys
        if ones:
            key.sort()
            sk = key
        else:
            bits = max(1, (len(key) - 1).bit_length())
            if len(blocks) * n_g < 2 ** (62 - bits):
                sk = key.astype(np.int64) << bits
                sk |= np.arange(len(key))
                sk.sort()
                order = sk & ((1 << bits) - 1)
                sk >>= bits
            else:
                order = np.argsort(key, kind="stable")
                sk = key.take(order)
        new = np.empty(len(sk), dtype=bool)
        new[:1] = True
        np.not_equal(sk[1:], sk[:-1], out=new[1:])
        at = np.flatnonzero(new)
        if ones:
            count = np.diff(at, append=len(sk))
        else:
            weights = np.concatenate([counts[start[m] : end[m]] for m in ms])
            count = np.add.reduceat(weights.take(order), at)
        b_loc, g_run = np.divmod(sk.take(at), n_g)
        got.append((blocks_a.take(b_loc), g_run, count))
    # (arrays no longer needed are dropped as the work goes on: the first ranking of a process pays for
    # every fresh page, about 4 us each on the 2-core machine)
    m_block, m_gid, m_count = (np.concatenate(x) for x in zip(*got))
    del got
    # the contents: the codes some block holds, numbered in the codes' order
    used = np.zeros(n_g, dtype=bool)
    used[m_gid] = True
    numbered = np.cumsum(used, dtype=np.int32 if n_g < 2**31 else np.int64)
    numbered -= 1
    m_content = numbered.take(m_gid)  # (read per unit row below)
    code = g_codes[used]
    n_contents = len(code)
    del m_gid, numbered, used
    # each content's lanes (rows then cols): its shape's, moved to the offset its code holds
    c_dr, c_dc = (code // dc_n) % dr_n + r_lo, code % dc_n + c_lo
    kind0, c_shape = np.divmod(code // (dr_n * dc_n), n_shapes)
    u0 = shape_rep[c_shape]  # (a distinct instruction of that shape)
    act0 = u_rows.take(u0, axis=0) >= 0
    r0 = np.where(act0, u_rows.take(u0, axis=0) - (lo_r[u0] - c_dr)[:, None], -1)
    c0 = np.where(act0, u_cols.take(u0, axis=0) - (lo_c[u0] - c_dc)[:, None], 0)
    del rows, cols, parts
    # each block's contents are one run (a period's keys sort by block first): where each run starts
    b_len = np.bincount(m_block, minlength=len(bm))
    b_start = np.zeros(len(bm), dtype=np.int64)
    runs = np.flatnonzero(np.concatenate([[True], m_block[1:] != m_block[:-1]]))
    b_start[m_block[runs]] = runs
    del m_block
    # every unit's rows: its block's contents under its layout; distinct (content, layout) pairs
    lens = b_len[ub_a]
    offset = np.cumsum(lens) - lens  # where each unit's run of rows starts
    row = np.repeat(b_start[ub_a] - offset, lens)
    row += np.arange(len(row))  # (each unit's run: its block's contents, in order)
    # tile layouts with the same formula parameters (tiles of other row counts) give every content the same
    # addresses: a pair is (content, the layout's formula), the formula's first layout standing for it
    # layouts of stacked tiles (``_parts``), each as a tuple of parts: addressed part by part below
    parted = [None if p is not None else _parts(x) for x, p in zip(lays, prm)]
    formula: dict[Any, int] = {}
    same = np.array(
        [formula.setdefault(p if p is not None else q if q is not None else j, j)
         for j, (p, q) in enumerate(zip(prm, parted))],
        np.int64,
    )  # fmt: skip
    # formulas numbered densely: the (content, formula) table below is contents x formulas, not x layouts
    forms, form_of = value_ranks(same)
    n_forms = len(forms)
    content = m_content.take(row)
    if any(q is not None for q in parted):
        # stacked tiles: where one part of its layout holds every active lane of a content, the pair is
        # (content, the part's tile formula, first row and byte base), whichever layout the part is in
        # (the fp32 GEMM: 161,000 pairs of its 1,056 layouts -> 22,000); else (content, the layout)
        lay = np.repeat(ul_a, lens)
        part_params, pid, part_of, combo_of = _part_rows(parted, *_extent(r0, c0))
        hit = part_of[content, combo_of[lay]]
        most = max(len(q) for q in parted if q is not None)
        eff = np.where(hit >= 0, n_forms + pid[lay * most + np.maximum(hit, 0)], form_of[lay])
        n_eff = n_forms + len(part_params)
        del lay, hit
        code, size = combine_codes((eff, 0, n_eff - 1), (content, 0, n_contents - 1))
        pair, prep = _ids(code, size)
        del code
        pc, pe = content.take(prep), eff.take(prep)
        # each pair's layout: its first row's unit's, that unit found by where the units' rows start
        pl = ul_a.take(np.searchsorted(offset, prep, side="right") - 1)
        del content, eff
    else:
        # (content, formula) as formula x contents + content: one unit reads one formula's row of the
        # table below (a window of the contents, in cache), not one entry in every row
        size = n_forms * n_contents
        code = np.repeat(
            (form_of.take(ul_a) * n_contents).astype(m_content.dtype if size < 2**31 else np.int64), lens
        )
        code += content
        del content
        # the distinct codes are the pairs, numbered in the codes' order: each one's formula and content
        # read off its code, and its layout the formula's first (any layout of a formula addresses alike)
        seen = np.zeros(size, dtype=bool)
        seen[code] = True
        codes = np.flatnonzero(seen)
        del seen
        # (a table of every code, but only its pairs' entries written or read: only their pages touched)
        lut = np.empty(size, dtype=np.int32 if len(codes) < 2**31 else np.int64)
        lut[codes] = np.arange(len(codes), dtype=lut.dtype)
        pair = lut.take(code)
        del lut, code
        pe, pc = np.divmod(codes, n_contents)
        pl = forms.take(pe)
    # pairs in the order of their contents' kind (a content's code starts with its kind): each kind is
    # one run of pairs, scored as a slice of the addresses (no copy)
    kind0 = kind0.take(pc)
    by_kind = np.argsort(kind0, kind="stable")
    pc, pl, pe, kind0 = pc.take(by_kind), pl.take(by_kind), pe.take(by_kind), kind0.take(by_kind)
    # each pair's addresses: formula layouts (tiles, replicated arrays) and parts of stacked tiles all at
    # once, any other layout through its own offsets
    on_tile = np.array([x is not None for x in prm])[pl]
    table = np.array([x if x is not None else (0,) * 6 for x in prm], dtype=np.int64)
    if on_tile.all():
        addr = _tile_addresses(table.take(pl, axis=0), r0, c0, pc)
    else:
        addr = np.empty((len(pc), r0.shape[1]), dtype=np.int64)
        at = np.flatnonzero(on_tile)
        addr[at] = _tile_addresses(table[pl[at]], r0, c0, pc[at])
        at = np.flatnonzero(pe >= n_forms)
        if len(at):
            addr[at] = _tile_addresses(part_params[pe[at] - n_forms], r0, c0, pc[at])
        at = np.flatnonzero(~on_tile & (pe < n_forms))
        at = at[np.argsort(pl[at], kind="stable")]
        for run in np.split(at, np.flatnonzero(np.diff(pl[at])) + 1) if len(at) else ():
            addr[run] = np.asarray(lays[int(pl[run[0]])].offsets(r0[pc[run]], c0[pc[run]]), dtype=np.int64)
    cost_w, cost_d = np.empty(len(pc), dtype=np.int64), np.empty(len(pc), dtype=np.int64)
    for (op, width), kd in kinds.items():
        lo, hi = np.searchsorted(kind0, [kd, kd + 1]).tolist()
        if hi > lo:
            at = by_kind[lo:hi]  # (the pairs' own numbers)
            cost_w[at], cost_d[at] = _costs(addr[lo:hi], width, op, arch)
    del addr
    # each unit's rows are one run: summed per run, in int64 (exact), a unit without rows left at 0
    k = m_count.take(row)
    wave, ideal = np.zeros(len(which), dtype=np.int64), np.zeros(len(which), dtype=np.int64)
    some = np.flatnonzero(lens)
    if len(some):
        at = offset[some]
        per_row = cost_w.take(pair)  # (one buffer for both sums)
        per_row *= k
        wave[some] = np.add.reduceat(per_row, at)
        cost_d.take(pair, out=per_row)
        per_row *= k
        ideal[some] = np.add.reduceat(per_row, at)
    return wave, ideal
