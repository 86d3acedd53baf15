"""No string in a result can escape where an export writes it.

Every string a result carries (kernel, device name, dtype, layout description, message, dist, environment
keys and values, the Gluon spelling, constant names, source file names) is drawn from hand-picked attacks
(CR, LF, U+2028/2029, form feed, vertical tab, NUL, a backslash at the end of a line, ``*/``, the ``??/``
trigraph, quotes, non-ASCII, lone surrogates, 100,000 characters) and from random unicode (hypothesis).
Then:

- every C header compiles with ``gcc -std=c99 -Wall -Wextra -Werror`` (ISO mode: trigraphs on), and
  ``gcc -dM -E`` shows that it defines exactly the expected macros, with the expected values (the
  ``_LAYOUT`` string decodes to the layout's bytes); the attack list also goes through g++ and nvcc;
- every Python module imports, and its globals are exactly the expected names with the expected values;
- every JSON export loads back equal to the result.

A name that cannot become an identifier is a ValueError naming it, never a broken file.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from autopad.export import (
    c_name,
    export_result,
    load_result,
    render_header,
    render_json,
    render_merged_header,
    render_python,
)
from autopad.results import TuneResult

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_export import NVCC, make_result, tile  # noqa: E402

GCC = shutil.which("gcc")
needs_gcc = pytest.mark.skipif(GCC is None, reason="gcc not found")

NASTY = [
    "\r#define EVIL 1",
    "\n#define EVIL 1\n",
    "a\r\nb\rc",
    "\u2028#define EVIL 1\u2029",
    "\f\v\x1c\x1d\x1e\x85",
    "\x00NUL\x00",
    "ends in a backslash \\",
    "\\",
    "\\\n#define EVIL 1",
    "*/ int evil; /*",
    "/* never closed",
    "??/",
    "??/\n#define EVIL 1",
    "??=define EVIL 1 ??( ??) ??< ??> ??' ??! ??-",
    '"; int evil; "',
    "' \" ` ''' \"\"\" \\x41 \\101 \\u0041",
    "caf\u00e9 \u00fc\u00df \u4e2d\u6587 \U0001f642 \u202e\u2066",
    "\ud800 lone surrogate \udfff",
    "\x1b[31mred\x1b[0m",
    "#include </etc/passwd>",
    "# -*- coding: rot13 -*-",
    "__LINE__ __FILE__ __COUNTER__",
    "x" * 100_000,
    "",
]
ATTACK = st.sampled_from("\r\n\\?*/\"'#\x00\x0b\x0c\u2028\u2029\x85 aZ9_{}()=;")
TEXT = st.one_of(
    st.sampled_from(NASTY),
    st.text(st.characters(exclude_categories=()), max_size=40),
    st.text(ATTACK, max_size=30),
)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
SETTINGS = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SPEC = tile(32, 64, sw_vec=4, per_phase=4, max_phase=16)
TILE_MACROS = (
    "LAYOUT SMEM_ROWS SMEM_COLS SMEM_ELEM_BYTES SMEM_PAD SMEM_SW_VEC SMEM_PER_PHASE SMEM_MAX_PHASE "
    "SMEM_ROW_STRIDE SMEM_ELEMS SMEM_BYTES SMEM_OFF SMEM_BYTE_OFF CUTE_SWIZZLE_B CUTE_SWIZZLE_M "
    "CUTE_SWIZZLE_S CUTE_SWIZZLE"
).split()


def fuzzed(
    kernel="transpose",
    gpu="NVIDIA H200",
    cc="90",
    dtype="float32",
    layout="pad 1",
    message="m",
    dist=None,
    env=None,
    gluon=None,
    names=("BM",),
    kernel_args=None,
) -> TuneResult:
    """A result whose strings are the given ones, with a known tile layout and constants 1, 2, 3 ..."""
    constants = {n: i + 1 for i, n in enumerate(names)}
    extra = {"layout_spec": SPEC, **({"gluon_layout": gluon} if gluon is not None else {})}
    if kernel_args is not None:
        extra["kernel_args"] = kernel_args
    r = make_result(constants, (gpu, cc) if gpu is not None else None, kernel, extra, dtype=dtype)
    best = type(r.best)(constants, layout, r.best.predicted, r.best.measured, extra)
    env = {"autopad": "0.1.0"} if env is None else env
    return TuneResult(
        r.kernel,
        r.backend,
        r.shape,
        dtype,
        "sm_90",
        "measured",
        message,
        best,
        r.candidates,
        r.device,
        env,
        dist,
    )


def _c_literal_bytes(lit: str) -> bytes:
    """The bytes of a C string literal the exporter wrote (escaped quote, backslash, ``?``, octal)."""
    assert lit.startswith('"') and lit.endswith('"'), lit
    body, out, i = lit[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        assert ch != '"', lit  # an unescaped quote would end the string
        if ch != "\\":
            out.append(ord(ch))
            i += 1
        elif body[i + 1] in '"\\?':
            out.append(ord(body[i + 1]))
            i += 2
        else:
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
    return bytes(out)


_BASE: dict[tuple[str, ...], set[str]] = {}


def defined_macros(path: Path, *flags: str) -> dict[str, str]:
    """Macros ``path`` defines beyond the compiler's own: name (with parameters) -> replacement text."""
    cmd = [GCC, "-std=c99", "-dM", "-E", "-x", "c", *flags]
    if flags not in _BASE:
        base = subprocess.run([*cmd, "/dev/null"], capture_output=True, text=True, check=True).stdout
        _BASE[flags] = set(base.splitlines())
    out = subprocess.run([*cmd, str(path)], capture_output=True, text=True, check=True).stdout
    macros = {}
    for line in set(out.splitlines()) - _BASE[flags]:
        m = re.match(r"#define ([A-Za-z_][A-Za-z0-9_]*(?:\([^)]*\))?) ?(.*)$", line)
        assert m, line
        macros[m.group(1)] = m.group(2)
    return macros


def check_header_text(text: str) -> None:
    assert text.isascii()
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text)  # only \n and \t as control characters
    assert "??" not in text
    for line in text.splitlines():
        assert not line.endswith("\\"), line


def compile_c(path: Path) -> None:
    r = subprocess.run(
        [GCC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-x", "c", str(path)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr[-2000:]


def expected_single(res: TuneResult, guard: str) -> dict[str, str | None]:
    """The macros a single result's header must define: name -> value (None: not checked here)."""
    prefix = f"AUTOPAD_{c_name(res.kernel)}"
    want: dict[str, str | None] = {guard: "", "AUTOPAD_FN_": None, "AUTOPAD_CXX14_": "0"}
    for name, v in res.best.constants.items():
        want[f"{prefix}_{c_name(name)}"] = str(v)
    for m in TILE_MACROS:
        key = f"{prefix}_{m}" + ("(r,c)" if m.endswith("OFF") else "")
        want[key] = None
    return want


def check_header(tmp: Path, res: TuneResult) -> None:
    path = tmp / f"h{uuid.uuid4().hex[:8]}.h"
    text = render_header(res, path)
    check_header_text(text)
    path.write_text(text)
    compile_c(path)
    macros = defined_macros(path)
    guard = f"AUTOPAD_GUARD_{c_name(path.name)}_"
    want = expected_single(res, guard)
    assert set(macros) == set(want)
    for name, value in want.items():
        if value is not None:
            assert macros[name] == value, name
    layout = macros[f"AUTOPAD_{c_name(res.kernel)}_LAYOUT"]
    raw = str(res.best.layout).encode("utf-8", "backslashreplace")
    assert _c_literal_bytes(layout) == (raw if len(raw) <= 1000 else raw[:1000] + b"...")


def import_text(tmp: Path, text: str):
    name = f"fuzz_{uuid.uuid4().hex}"
    path = tmp / f"{name}.py"
    path.write_text(text, encoding="ascii")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


PY_NAMES = {
    "KERNEL", "BACKEND", "DEVICE", "CC", "SHAPE", "DTYPE", "DIST", "ARCH", "MODE", "LAYOUT", "MEASURED_MS",
    "PREDICTED_S", "MESSAGE", "ENVIRONMENT", "CONSTANTS", "CONFIG", "NUM_WARPS", "NUM_STAGES", "LAUNCH",
    "LAYOUT_SPEC", "CUTE_SWIZZLE", "GLUON_LAYOUT", "triton_config", "gluon_layout",
}  # fmt: skip


def check_python(tmp: Path, res: TuneResult) -> None:
    text = render_python(res)
    assert text.isascii() and "\x00" not in text and "\r" not in text
    mod = import_text(tmp, text)
    consts = {c_name(n): v for n, v in res.best.constants.items()}
    public = {k for k in vars(mod) if not k.startswith("_")}
    assert public == PY_NAMES | set(consts)
    assert {k for k in vars(mod) if k.startswith("_") and not k.startswith("__")} <= {"_Constant", "_tl"}
    assert mod.__doc__.startswith("Generated by autopad") and "Do not edit" in mod.__doc__
    got = (mod.KERNEL, mod.DEVICE, mod.DTYPE, mod.LAYOUT, mod.MESSAGE, mod.DIST, mod.ENVIRONMENT, mod.SHAPE)
    want = (res.kernel, res.device.get("name", ""), res.dtype, res.best.layout, res.message, res.dist)
    assert got == (*want, res.environment, res.shape)
    assert mod.CONSTANTS == consts and all(getattr(mod, k) == v for k, v in consts.items())
    spelled = "gl.SwizzledSharedLayout(vec=4, per_phase=4, max_phase=16, order=[1, 0])"
    assert mod.GLUON_LAYOUT == (res.best.extra.get("gluon_layout") or spelled)


def acceptable(err: ValueError) -> bool:
    """The ValueErrors a fuzzed name may cause: it has no identifier characters, starts with a digit,
    clashes with another name, or is a reserved one."""
    pattern = r"identifier|starts with a digit|both become|defined twice|module constant"
    return bool(re.search(pattern, str(err)))


# ---- the hand-picked attacks, through every compiler -------------------------------------------------


@needs_gcc
@pytest.mark.parametrize("i", range(len(NASTY)))
def test_attack_strings_in_every_field(tmp_path, i):
    s = NASTY[i]
    env = {s: s, "k": [s, {s: 1}]}
    res = fuzzed("k" + s, s, "9.0", s, s, s, s, env, s, ("BM", "x" + s))
    check_header(tmp_path, res)
    check_python(tmp_path, res)
    assert load_result(export_result(res, tmp_path / "r.json")) == res


@needs_gcc
def test_attack_strings_through_gxx_nvcc_and_merged_headers(tmp_path):
    """All attacks at once: one header per attack (device name, layout, message ... all the attack), one
    merged header of several devices named by attacks; g++ with -trigraphs, gcc, and nvcc compile them."""
    cu = ['#include "all.h"']
    results = []
    for i, s in enumerate(NASTY):
        res = fuzzed(f"k{i}", f"{s}GPU{i}", str(70 + i), "float32", s, s, s, {s: s}, s)
        results.append(res)
        (tmp_path / f"k{i}.h").write_text(render_header(res, f"k{i}.h"))
        cu.append(f'#include "k{i}.h"')
    merged = [replace(r, kernel="merged") for r in results]
    text = render_merged_header(merged, "all.h", sources=NASTY)
    check_header_text(text)
    (tmp_path / "all.h").write_text(text)
    compile_c(tmp_path / "all.h")
    macros = defined_macros(tmp_path / "all.h")
    assert set(macros) == set(expected_single(merged[0], "AUTOPAD_GUARD_ALL_H_"))
    cu.append("__global__ void k(int *x) { x[AUTOPAD_MERGED_SMEM_OFF(1, 2)] = AUTOPAD_MERGED_BM; }")
    cu_path = tmp_path / "all.cu"
    cu_path.write_text("\n".join(cu) + "\n")
    flags = ["-std=c++17", "-trigraphs", "-Wall", "-Werror", "-fsyntax-only", "-x", "c++", "-D__global__="]
    gxx = subprocess.run(["g++", *flags, "-I", str(tmp_path), str(cu_path)], capture_output=True, text=True)
    assert gxx.returncode == 0, gxx.stderr[-3000:]
    if NVCC is not None:
        cmd = [NVCC, "-arch=sm_90", "-c", str(cu_path), "-o", str(tmp_path / "all.o"), "-I", str(tmp_path)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]


def test_bad_names_are_clear_errors(tmp_path):
    for kernel in ("", "\r\n", "\u4e2d\u6587", "??/"):
        with pytest.raises(ValueError, match="identifier"):
            render_header(fuzzed(kernel=kernel), "x.h")
    with pytest.raises(ValueError, match="identifier"):
        render_merged_header([fuzzed(gpu="\u4e2d\u6587")], "x.h")
    for names in (("\r",), ("9lives",), ("a-b", "A_B"), ("SMEM_OFF",)):
        with pytest.raises(ValueError) as err:
            render_header(fuzzed(names=names), "x.h")
        assert acceptable(err.value), err.value
    with pytest.raises(ValueError, match="module constant"):
        render_python(fuzzed(names=("CONFIG",)))
    with pytest.raises(ValueError, match="not a Python identifier"):
        render_python(fuzzed(names=("BM",), kernel_args=["BM\n"]))
    assert not list(tmp_path.iterdir())


# ---- random strings (hypothesis) ------------------------------------------------------------------------

# mostly names that can become identifiers (so the file is written and checked), 1 in 4 anything at all
NAME = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,8}", fullmatch=True) | TEXT.map(lambda s: "k" + s)
GOOD_NAMES = st.lists(NAME, min_size=1, max_size=4, unique_by=c_name)
NAMES = st.one_of(GOOD_NAMES, GOOD_NAMES, GOOD_NAMES, st.lists(TEXT, min_size=1, max_size=2))
FIELDS = dict(
    kernel=st.one_of(TEXT.map(lambda s: "k" + s), st.sampled_from(["transpose", "my-kernel v2"]), TEXT),
    gpu=TEXT,
    dtype=TEXT,
    layout=TEXT,
    message=TEXT,
    dist=st.none() | TEXT,
    gluon=st.none() | TEXT,
    names=NAMES.map(tuple),
)


@needs_gcc
@settings(SETTINGS, max_examples=150)
@given(fields=st.fixed_dictionaries(FIELDS))
def test_fuzz_header_defines_only_what_it_should(tmp_path_factory, fields):
    res = fuzzed(**fields)
    try:
        render_header(res, "x.h")
    except ValueError as err:
        assert acceptable(err), err
        event("rejected with a ValueError")
        return
    event("compiled and checked")
    check_header(tmp_path_factory.mktemp("h"), res)


@settings(SETTINGS, max_examples=150)
@given(fields=st.fixed_dictionaries({**FIELDS, "env": st.dictionaries(TEXT, JSONISH, max_size=4)}))
def test_fuzz_python_module_globals_are_exactly_expected(tmp_path_factory, fields):
    res = fuzzed(**fields)
    try:
        render_python(res)
    except ValueError as err:
        assert acceptable(err), err
        event("rejected with a ValueError")
        return
    event("imported and checked")
    check_python(tmp_path_factory.mktemp("py"), res)


@settings(SETTINGS, max_examples=150)
@given(
    fields=st.fixed_dictionaries({**FIELDS, "env": st.dictionaries(TEXT, JSONISH, max_size=4)}),
    extra=st.dictionaries(TEXT, JSONISH, max_size=3),
)
def test_fuzz_json_round_trips_any_string(fields, extra):
    res = fuzzed(**fields)
    best = type(res.best)(res.best.constants, res.best.layout, 1.0, None, extra)
    res = replace(res, best=best)
    text = render_json(res)
    assert text.isascii()
    back = TuneResult.from_dict(json.loads(text))
    assert back == res and render_json(back) == text


# ---- crafted files through the command line ----------------------------------------------------------

EVIL = "\r#define EVIL 1\n#include </etc/passwd>\n??/\n*/ \\"


def _no_evil(path: Path) -> None:
    text = path.read_text(encoding="ascii")
    check_header_text(text)
    compile_c(path)
    assert not any(m.startswith("EVIL") for m in defined_macros(path))


@needs_gcc
def test_crafted_result_file_exports_safely(tmp_path, capsys):
    from autopad.cli import main

    res = fuzzed(
        kernel="transpose", gpu=EVIL, layout=EVIL, message=EVIL, dist=EVIL, env={EVIL: EVIL}, gluon=EVIL
    )
    crafted = tmp_path / "crafted.json"
    crafted.write_text(render_json(res))
    for out in ("x.h", "x.py"):
        assert main(["export", str(crafted), "-o", str(tmp_path / out)]) == 0
    _no_evil(tmp_path / "x.h")
    assert "define EVIL" in (tmp_path / "x.h").read_text()
    assert import_text(tmp_path, (tmp_path / "x.py").read_text()).LAYOUT == EVIL
    (tmp_path / "junk.json").write_text("[" * 100_000)
    assert main(["export", str(tmp_path / "junk.json"), "-o", str(tmp_path / "y.h")]) != 0
    assert "not an autopad result" in capsys.readouterr().err


@needs_gcc
def test_tampered_cache_entry_exports_safely(tmp_path, monkeypatch, capsys):
    """A cache entry edited to carry code in its layout string: exporting it from the cache, and a cache
    hit of ``autopad tune ... --export``, still write a header that defines nothing else."""
    from autopad.cli import main

    monkeypatch.setenv("AUTOPAD_NO_BENCH", "1")
    args = ["transpose", "--shape", "64x64", "--backend", "cuda"]
    assert main(["tune", *args]) == 0
    (entry,) = (Path(p) for p in (tmp_path / "autopad-cache" / "tune").glob("*.json"))
    data = json.loads(entry.read_text())
    data["result"]["result"]["best"]["layout"] = EVIL
    data["result"]["result"]["device"] = {"name": EVIL}
    entry.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")))  # as the cache writes it
    assert main(["export", "--kernel", "transpose", "--shape", "64x64", "--backend", "cuda", "-o",
                 str(tmp_path / "a.h")]) == 0  # fmt: skip
    assert main(["tune", *args, "--export", str(tmp_path / "b.h")]) == 0
    capsys.readouterr()
    for name in ("a.h", "b.h"):
        _no_evil(tmp_path / name)
        assert "define EVIL" in (tmp_path / name).read_text()  # the entry was used: the text, made harmless
