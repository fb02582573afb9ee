"""A small text form of a GEMM problem and config, for logs, cache keys and the CLI:

    gemm m=17 n=33 k=65 a=bf16 b=bf16 d=bf16 acc=fp32 layout=NT alpha=1.0 beta=0.0 bias=none act=none
    tile 128x128x32 waves=2x2 mfma=V_MFMA_F32_32X32X8_BF16 lds_pad=8 prefetch=2 unroll=1 vec=8x8 lds_buffers=2

`format_*` prints the canonical form (fixed key order, defaults included) and `parse` reads it back, so
`format(parse(format(x))) == format(x)`. Keys added later have defaults, so older texts still parse.
Parsed with a lark LALR grammar built once.
"""

from __future__ import annotations

from functools import cache

from .dtypes import dtype
from .gemm_ir import GemmConfig, GemmProblem, IRError

_GRAMMAR = r"""
    start: _NL* problem (_NL+ config)? _NL*
    problem: "gemm" pair*
    config: "tile" SHAPE3 pair*
    pair: KEY "=" value
    ?value: SHAPE3 | SHAPE2 | SIGNED | WORD
    SHAPE3.3: /\d+x\d+x\d+/
    SHAPE2.2: /\d+x\d+/
    SIGNED.1: /[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?/
    KEY: /[a-z_]+/
    WORD: /[A-Za-z_][A-Za-z0-9_]*/
    _NL: /(\r?\n|;)/
    %ignore /[ \t]+/
    %ignore /#[^\n]*/
"""

_PROBLEM_KEYS = ("m", "n", "k", "batch", "a", "b", "c", "d", "acc", "layout", "lda", "ldb", "ldc", "ldd",
                 "alpha", "beta", "bias", "act", "a_scale", "b_scale", "scale_block", "b_preshuffle",
                 "scale_mode", "a_scale_order", "b_scale_order", "k_split", "grouped")
_CONFIG_KEYS = ("waves", "mfma", "lds_pad", "prefetch", "unroll", "vec", "lds_buffers")


@cache
def _parser():
    from lark import Lark  # imported on first parse: printing (cache keys) needs no parser

    return Lark(_GRAMMAR, parser="lalr", propagate_positions=True)


def _num(x: float) -> str:
    return repr(float(x))


def format_problem(p: GemmProblem) -> str:
    parts = [f"m={p.m}", f"n={p.n}", f"k={p.k}"]
    if p.batch != 1:
        parts.append(f"batch={p.batch}")
    parts += [f"a={p.a.name}", f"b={p.b.name}"]
    if p.c is not None:
        parts.append(f"c={p.c.name}")
    parts += [f"d={p.d.name}", f"acc={p.acc.name}", f"layout={p.layout}"]
    for op in ("a", "b", "c", "d"):
        ld = getattr(p, f"ld{op}")
        if ld is not None:
            parts.append(f"ld{op}={ld}")
    parts += [f"alpha={_num(p.alpha)}", f"beta={_num(p.beta)}", f"bias={p.bias}", f"act={p.activation}"]
    if p.scaled:      # block-scaled problems: the scale and weight layouts shape the kernel (and its cache key)
        parts += [f"a_scale={p.a_scale}", f"b_scale={p.b_scale}", f"scale_block={p.scale_block}",
                  f"b_preshuffle={p.b_preshuffle}"]
    if p.scale_mode != "none":   # fp32 scale modes (unscaled texts, and cache keys, stay as they were)
        parts.append(f"scale_mode={p.scale_mode}")
        if p.scale_mode == "block":
            parts += [f"a_scale_order={p.a_scale_order}", f"b_scale_order={p.b_scale_order}"]
    if p.k_split != "none":      # split-K partial kernels (codegen/gemm_split.py); other texts stay as they were
        parts.append(f"k_split={p.k_split}")
    if p.grouped:                # grouped GEMM (codegen/gemm_group.py)
        parts.append("grouped=1")
    return "gemm " + " ".join(parts)


def format_config(c: GemmConfig) -> str:
    return (f"tile {c.tile_m}x{c.tile_n}x{c.depth_k} waves={c.waves_m}x{c.waves_n} mfma={c.mfma} "
            f"lds_pad={c.lds_pad} prefetch={c.prefetch} unroll={c.unroll} vec={c.vec_a}x{c.vec_b} "
            f"lds_buffers={c.lds_buffers}")


def format_ir(problem: GemmProblem, config: GemmConfig | None = None) -> str:
    return format_problem(problem) + ("" if config is None else "\n" + format_config(config))


def _pairs(tree, accepted: tuple[str, ...], where: str, source: str) -> dict:
    out: dict = {}
    for pair in tree.find_data("pair"):
        key, value = pair.children
        if str(key) not in accepted:
            raise IRError(f"{source}:{key.line}:{key.column}: unknown key {str(key)!r} in {where}; accepted: "
                          f"{', '.join(accepted)}")
        if str(key) in out:
            raise IRError(f"{source}:{key.line}:{key.column}: key {str(key)!r} given twice")
        out[str(key)] = value
    return out


def _int(tok, key: str, source: str) -> int:
    try:
        return int(str(tok))
    except ValueError:
        raise IRError(f"{source}:{tok.line}:{tok.column}: {key} must be an integer, got {str(tok)!r}") from None


def _float(tok, key: str, source: str) -> float:
    try:
        return float(str(tok))
    except ValueError:
        raise IRError(f"{source}:{tok.line}:{tok.column}: {key} must be a number, got {str(tok)!r}") from None


def parse(text: str, source: str = "<gemm>") -> tuple[GemmProblem, GemmConfig | None]:
    """Problem and optional config from the text form; IRError with source:line:col on bad input."""
    from lark import UnexpectedInput

    try:
        tree = _parser().parse(text)
    except UnexpectedInput as exc:
        expected = getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ()
        hint = f"; expected one of: {', '.join(sorted(expected))}" if expected else ""
        raise IRError(f"{source}:{exc.line}:{exc.column}: cannot parse GEMM text{hint}") from None
    problem_tree = next(tree.find_data("problem"))
    kv = _pairs(problem_tree, _PROBLEM_KEYS, "gemm", source)
    for required in ("m", "n", "k", "a"):
        if required not in kv:
            raise IRError(f"{source}: gemm needs {required}=...")
    ints = {key: _int(kv[key], key, source) for key in ("m", "n", "k", "batch", "lda", "ldb", "ldc", "ldd",
                                                         "scale_block") if key in kv}
    floats = {key: _float(kv[key], key, source) for key in ("alpha", "beta") if key in kv}
    names = {key: str(kv[key]) for key in ("b", "c", "d", "acc") if key in kv}
    try:
        problem = GemmProblem.make(
            ints["m"], ints["n"], ints["k"], str(kv["a"]), names.get("b"), names.get("d"), c=names.get("c"),
            acc=names.get("acc"), layout=str(kv.get("layout", "NN")), batch=ints.get("batch", 1),
            lda=ints.get("lda"), ldb=ints.get("ldb"), ldc=ints.get("ldc"), ldd=ints.get("ldd"),
            alpha=floats.get("alpha", 1.0), beta=floats.get("beta", 0.0), bias=str(kv.get("bias", "none")),
            activation=str(kv.get("act", "none")), a_scale=str(kv.get("a_scale", "none")),
            b_scale=str(kv.get("b_scale", "none")), scale_block=ints.get("scale_block", 32),
            b_preshuffle=str(kv.get("b_preshuffle", "none")), scale_mode=str(kv.get("scale_mode", "none")),
            a_scale_order=str(kv.get("a_scale_order", "row")), b_scale_order=str(kv.get("b_scale_order", "row")),
            k_split=str(kv.get("k_split", "none")), grouped=str(kv.get("grouped", "0")) in ("1", "true"))
    except ValueError as exc:  # IRError, and unknown dtype names
        raise IRError(f"{source}:{problem_tree.meta.line}: {exc}") from None
    config = None
    for config_tree in tree.find_data("config"):
        shape = config_tree.children[0]
        tm, tn, tk = (int(x) for x in str(shape).split("x"))
        ckv = _pairs(config_tree, _CONFIG_KEYS, "tile", source)
        waves = str(ckv.get("waves", "2x2"))
        if waves.count("x") != 1:
            tok = ckv["waves"]
            raise IRError(f"{source}:{tok.line}:{tok.column}: waves must look like 2x2, got {waves!r}")
        wm, wn = (int(x) for x in waves.split("x"))
        if "mfma" not in ckv:
            raise IRError(f"{source}:{shape.line}: tile needs mfma=<instruction name>")
        vec = str(ckv.get("vec", "1x1"))
        if vec.count("x") != 1:
            tok = ckv["vec"]
            raise IRError(f"{source}:{tok.line}:{tok.column}: vec must look like 4x4 (A x B), got {vec!r}")
        va, vb = (int(x) for x in vec.split("x"))
        config = GemmConfig(tm, tn, tk, wm, wn, str(ckv["mfma"]).upper(), vec_a=va, vec_b=vb,
                            lds_pad=_int(ckv["lds_pad"], "lds_pad", source) if "lds_pad" in ckv else 0,
                            prefetch=_int(ckv["prefetch"], "prefetch", source) if "prefetch" in ckv else 1,
                            unroll=_int(ckv["unroll"], "unroll", source) if "unroll" in ckv else 1,
                            lds_buffers=(_int(ckv["lds_buffers"], "lds_buffers", source) if "lds_buffers" in ckv
                                         else 1))
    return problem, config


def parse_dtype_list(text: str):
    """`bf16` or `fp8,bf8` (A,B) for the CLI's --dtype."""
    parts = [dtype(x) for x in text.split(",")]
    return parts[0], parts[1] if len(parts) > 1 else parts[0]
