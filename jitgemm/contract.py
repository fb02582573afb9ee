"""The kernel contract: one precise description of what a GEMM kernel computes, how to call it and for which
problems it is legal, whoever generated the kernel. Validated against `specs/contract.schema.yaml`; checked
against the code object's own metadata; asked, clause by clause, whether a problem is legal.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from jitgemm.codegen.gemm_ir import GemmProblem

# argument roles that carry a buffer address (the rest are by-value scalars)
POINTER_ROLES = ("a", "b", "c", "d", "bias", "a_scale", "b_scale")


class ContractError(ValueError):
    """A contract that is malformed, unsatisfiable, or contradicts its code object."""


@functools.cache
def schema() -> dict:
    import yaml  # at use: importing PyYAML costs a disk-cache hit ~15 ms of CPU (issue 31)

    return yaml.safe_load(resources.files("jitgemm.specs").joinpath("contract.schema.yaml").read_text(encoding="utf-8"))


@functools.cache
def _validator():
    import jsonschema  # imported on first validation: it costs ~50 ms at start-up

    cls = jsonschema.validators.validator_for(schema())
    return cls(schema())


def _where(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


# --- grid formulas ------------------------------------------------------------------------------------
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}
_NAMES = ("m", "n", "k", "batch", "split_k")


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


_FUNCS = {"ceil": None, "min": min, "max": max}


MAX_FORMULA = 256  # characters of one grid formula (the schema's maxLength)
MAX_CONSTANT = 0xFFFFFFFF
MAX_GRID = 0xFFFFFFFF  # a grid dimension (workgroups) the dispatch packet can carry


def _eval(node: ast.AST, env: Mapping[str, int]) -> int:
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        if not 0 <= node.value <= MAX_CONSTANT:
            raise ContractError(f"constant {node.value} in grid formula; constants are 0 to {MAX_CONSTANT}")
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return int(env[node.id])
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords:
        if node.func.id == "ceil":
            arg = node.args[0] if len(node.args) == 1 else None
            if not (isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Div)):
                raise ContractError("ceil() takes one division, e.g. ceil(n/128)")
            return _ceil_div(_eval(arg.left, env), _eval(arg.right, env))
        if len(node.args) < 2:
            raise ContractError(f"{node.func.id}() takes two or more arguments, e.g. {node.func.id}(m, 64)")
        return _FUNCS[node.func.id](*(_eval(a, env) for a in node.args))
    raise ContractError(f"unsupported element {ast.dump(node)[:60]} in grid formula; allowed: integers, m, n, k, "
                        f"batch, split_k, + - * //, ceil(x/y), min, max")


@functools.cache
def _compile_formula(text: str) -> ast.Expression:
    if not isinstance(text, str) or len(text) > MAX_FORMULA:
        raise ContractError(f"grid formula of {len(text)} characters; at most {MAX_FORMULA}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ContractError(f"grid formula {text!r} does not parse: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise ContractError(f"grid formula {text[:40]!r}... nests too deeply") from None
    _checked_eval(tree, dict.fromkeys(_NAMES, 1), text)  # reject unsupported syntax at load time
    return tree


def _checked_eval(tree: ast.Expression, env: Mapping[str, int], text: str) -> int:
    """The formula's value, with every way evaluation can fail said as a ContractError naming the formula."""
    try:
        value = _eval(tree, env)
    except ZeroDivisionError:
        values = ", ".join(f"{k}={env[k]}" for k in _NAMES if k in env)
        raise ContractError(f"grid formula {text!r} divides by zero at {values}") from None
    except RecursionError:
        raise ContractError(f"grid formula {text[:40]!r}... nests too deeply") from None
    except ContractError as exc:
        raise ContractError(f"grid formula {text!r}: {exc}") from None
    return value


def evaluate_formula(text: str, env: Mapping[str, int]) -> int:
    """A grid formula's value for the sizes in `env`: 0 to MAX_GRID, else ContractError (negative, or more
    workgroups than a dispatch can carry)."""
    value = _checked_eval(_compile_formula(text), env, text)
    if not 0 <= value <= MAX_GRID:
        values = ", ".join(f"{k}={env[k]}" for k in _NAMES if k in env)
        raise ContractError(f"grid formula {text!r} gives {value} at {values}; a grid dimension is 0 to {MAX_GRID}")
    return value


# --- the contract -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Clause:
    """One legality clause checked against one problem."""

    name: str
    ok: bool
    reason: str


def _without_retired_scale(obj: Mapping[str, Any], source: str) -> Mapping[str, Any]:
    """Contracts written before operation.scale_mode carry `operation.scale: none`, a field nothing read: it is
    dropped so their code objects (disk cache, supplier folders) still load; any other value is refused, since
    the scale a kernel applies is stated by operation.scale_mode (and a_scale/b_scale for MX) alone."""
    op = obj.get("operation")
    if not isinstance(op, Mapping) or "scale" not in op:
        return obj
    if op["scale"] != "none":
        raise ContractError(f"{source}: at operation.scale: {op['scale']!r}: operation.scale is retired; state the "
                            f"kernel's scaling as operation.scale_mode (none, tensor, rowcol, block)")
    return {**obj, "operation": {k: v for k, v in op.items() if k != "scale"}}


class Contract:
    """A validated contract. `data` is the plain mapping (as embedded in the code object)."""

    __slots__ = ("data", "source")

    def __init__(self, data: Mapping[str, Any], source: str = "<contract>") -> None:
        self.data = data
        self.source = source

    @staticmethod
    def load(obj: Mapping[str, Any] | str | bytes, source: str = "<contract>") -> Contract:
        """Validate a mapping or YAML text; ContractError names the key and what is allowed."""
        if isinstance(obj, (str, bytes)):
            import yaml

            try:
                from jitgemm.util.safe_yaml import load_yaml

                obj = load_yaml(obj)
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
                raise ContractError(f"{source}{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
        if not isinstance(obj, Mapping):
            raise ContractError(f"{source}: a contract is a mapping, got {type(obj).__name__}")
        obj = _without_retired_scale(obj, source)
        errors = sorted(_validator().iter_errors(obj), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
        if errors:
            from jsonschema.exceptions import best_match

            best = best_match(errors)
            more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
            raise ContractError(f"{source}: at {_where(best.absolute_path)}: {best.message}{more}")
        contract = Contract(obj, source)
        contract._check_consistent()
        return contract

    @staticmethod
    def planned(obj: Mapping[str, Any], source: str = "<contract>") -> Contract:
        """A contract this project's own code built (a generator's planned contract, `gemm_contract`): checked for
        consistency but not against the schema -- importing jsonschema and walking the schema cost a cold
        compile ~0.2 s (issue 31), and tests/jitgemm/test_planned_contracts.py validates what the generators plan
        against the schema. Every contract from outside (a file, a sidecar, a tuning row, a GFA or aiter
        record, Triton's description) goes through `load`."""
        contract = Contract(_without_retired_scale(obj, source), source)
        contract._check_consistent()
        return contract

    # accessors
    @property
    def kernel(self) -> str:
        return self.data["identity"]["kernel"]

    @property
    def generator(self) -> str:
        return self.data["identity"]["generator"]

    @property
    def target(self) -> str:
        return self.data["identity"]["target"]

    @property
    def args(self) -> list[Mapping[str, Any]]:
        return list(self.data["abi"]["args"])

    @property
    def workgroup(self) -> tuple[int, int, int]:
        return tuple(self.data["launch"]["workgroup"])  # type: ignore[return-value]

    @property
    def lds_bytes(self) -> int:
        return int(self.data["launch"].get("lds_bytes", 0))

    @property
    def split_k(self) -> Mapping[str, Any] | None:
        """`launch.split_k` (max, power_of_two, zero_output, k_multiple), or None: the kernel takes one split."""
        return self.data["launch"].get("split_k")

    def split_refusal(self, k: int, split_k: int) -> str | None:
        """Why this kernel cannot run K = `k` in `split_k` splits (None: it can)."""
        if split_k == 1:
            return None
        spec = self.split_k
        if spec is None:
            return f"launch.split_k: kernel {self.kernel} does not split K (split_k={split_k} asked)"
        if not 1 <= split_k <= spec["max"]:
            return f"launch.split_k.max: split_k={split_k} outside 1..{spec['max']}"
        if spec.get("power_of_two") and split_k & (split_k - 1):
            return f"launch.split_k.power_of_two: split_k={split_k} is not a power of two"
        if "stream_k" in spec:        # any workgroup count: each takes an equal share of tiles x K steps
            return None
        if "k_tail_step" in spec:     # ranges of whole steps, the last takes K's remainder; none may be empty
            step = spec["k_tail_step"]
            tiles = -(-k // step)
            per = -(-tiles // split_k) * step
            if per * (split_k - 1) >= k:
                return (f"launch.split_k.k_tail_step: k={k} in ranges of {per} (whole {step}-element steps) leaves "
                        f"range {split_k - 1} empty")
            return None
        step = spec.get("k_multiple", 1) * split_k
        if k % step:
            return (f"launch.split_k.k_multiple: k={k} is not a multiple of split_k x {spec.get('k_multiple', 1)} "
                    f"= {step}")
        return None

    def grid(self, m: int, n: int, k: int, batch: int = 1, split_k: int = 1) -> tuple[int, int, int]:
        env = {"m": m, "n": n, "k": k, "batch": batch, "split_k": split_k}
        return tuple(evaluate_formula(f, env) for f in self.data["launch"]["grid"])  # type: ignore[return-value]

    def _check_consistent(self) -> None:
        """A contract whose clauses cannot hold together is refused."""
        abi = self.data["abi"]
        seen: list[tuple[int, int, str]] = []
        for i, arg in enumerate(abi["args"]):
            at = f"{self.source}: at abi.args.{i} ({arg['name']})"
            end = arg["offset"] + arg["size"]
            if end > abi["kernarg_size"]:
                raise ContractError(f"{at}: the argument ends at byte {end}, beyond abi.kernarg_size "
                                    f"{abi['kernarg_size']}")
            if arg["offset"] % arg["size"]:
                raise ContractError(f"{at}: offset {arg['offset']} is not aligned to the size {arg['size']}")
            if arg.get("type") == "ptr" and arg["size"] != 8:
                raise ContractError(f"{at}: a ptr argument is 8 bytes, not {arg['size']}")
            for start, stop, other in seen:
                if arg["offset"] < stop and start < end:
                    raise ContractError(f"{at}: overlaps argument {other}")
            seen.append((arg["offset"], end, arg["name"]))
        roles = [a["role"] for a in abi["args"]]
        leg = self.data.get("legality", {})
        lo, hi = leg.get("min", {}), leg.get("max", {})
        grouped = bool(self.data.get("operation", {}).get("grouped", False))
        for needed in ("a", "b", "d", "n", "k") + (() if grouped else ("m",)):   # a grouped kernel's rows: offsets
            fixed = needed in lo and lo[needed] == hi.get(needed)   # a size the legality fixes needs no argument
            if needed not in roles and not fixed:
                raise ContractError(f"{self.source}: abi.args has no argument with role {needed!r}")
        for dim in ("m", "n", "k"):
            if dim in lo and dim in hi and lo[dim] > hi[dim]:
                raise ContractError(f"{self.source}: legality.min.{dim}={lo[dim]} > legality.max.{dim}={hi[dim]}")
            div = leg.get("divisible", {}).get(dim)
            if div and dim in hi and hi[dim] < div:
                raise ContractError(f"{self.source}: no {dim} <= {hi[dim]} is divisible by {div}")
        for f in self.data["launch"]["grid"]:
            _compile_formula(f)
        op = self.data["operation"]
        if self.data["features"].get("beta") and not self.data["features"].get("c_input"):
            raise ContractError(f"{self.source}: features.beta needs features.c_input")
        if op.get("c") is None and self.data["features"].get("c_input"):
            raise ContractError(f"{self.source}: features.c_input but operation.c is null")

    def check_metadata(self, kernel_meta: Mapping[str, Any]) -> None:
        """Refuse a contract that contradicts the code object's AMDGPU metadata for its kernel
        (argument offsets/sizes, kernarg size, workgroup size)."""
        where = f"{self.source}: contract vs code object metadata of {self.kernel}"
        ksize = kernel_meta.get(".kernarg_segment_size")
        explicit = [a for a in kernel_meta.get(".args", []) if not str(a.get(".value_kind", "")).startswith("hidden_")]
        by_offset = {int(a[".offset"]): a for a in explicit}
        for i, arg in enumerate(self.args):
            at = f"{where}: at abi.args.{i} ({arg['name']})"
            meta = by_offset.get(arg["offset"])
            if meta is None:
                raise ContractError(f"{at}: offset {arg['offset']} is not an argument of the metadata (offsets "
                                    f"there: {sorted(by_offset)})")
            if int(meta[".size"]) != arg["size"]:
                raise ContractError(f"{at}: size {arg['size']} in the contract, {meta['.size']} in the metadata")
            is_ptr = meta.get(".value_kind") == "global_buffer"
            if (arg["role"] in POINTER_ROLES) != is_ptr and arg["role"] != "unused":
                raise ContractError(f"{at}: role {arg['role']} but the metadata's argument is "
                                    f"{meta.get('.value_kind')}")
        if ksize is not None and int(ksize) < self.data["abi"]["kernarg_size"]:
            raise ContractError(f"{where}: kernarg_size {self.data['abi']['kernarg_size']} exceeds the metadata's "
                                f".kernarg_segment_size {ksize}")
        wg = math.prod(self.workgroup)
        max_wg = kernel_meta.get(".max_flat_workgroup_size")
        if max_wg is not None and wg > int(max_wg):
            raise ContractError(f"{where}: workgroup {self.workgroup} has {wg} work-items, the kernel allows "
                                f"{max_wg}")
        reqd = kernel_meta.get(".reqd_workgroup_size")
        if reqd is not None and tuple(reqd) != self.workgroup:
            raise ContractError(f"{where}: workgroup {self.workgroup} but the kernel requires {tuple(reqd)}")

    def legality(self, problem: GemmProblem, align: Mapping[str, int] | None = None) -> list[Clause]:
        """Every clause of the contract against a problem, in a fixed order; `align` gives the byte alignment
        of each pointer (a, b, c, d, bias) when known."""
        op, leg, feat = self.data["operation"], self.data.get("legality", {}), self.data["features"]
        out: list[Clause] = []

        def clause(name: str, ok: bool, why: str) -> None:
            out.append(Clause(name, bool(ok), "" if ok else why))

        clause("operation.a/b", (op["a"], op["b"]) == (problem.a.name, problem.b.name),
               f"kernel takes {op['a']}x{op['b']}, problem is {problem.a.name}x{problem.b.name}")
        clause("operation.d", op["d"] == problem.d.name, f"kernel writes {op['d']}, problem wants {problem.d.name}")
        clause("operation.acc", op["acc"] == problem.acc.name, f"kernel accumulates in {op['acc']}")
        clause("operation.layout", op["layout"] == problem.layout,
               f"kernel layout {op['layout']}, problem {problem.layout}")
        # block scaling (OCP MX): the scale layout of each side and the weight layout shape the kernel's loads
        for key, wanted in (("a_scale", problem.a_scale), ("b_scale", problem.b_scale),
                            ("b_preshuffle", problem.b_preshuffle)):
            clause(f"operation.{key}", op.get(key, "none") == wanted,
                   f"kernel takes {op.get(key, 'none')}, problem has {wanted}")
        # fp32 scale modes: a kernel without the field computes an unscaled product
        clause("operation.scale_mode", op.get("scale_mode", "none") == problem.scale_mode,
               f"kernel scale mode {op.get('scale_mode', 'none')}, problem {problem.scale_mode} (accepted modes: "
               f"none, tensor, rowcol, block)")
        # split-K partial kernels (codegen/gemm_split.py) write raw partial sums, one K range per z slice
        clause("operation.grouped", bool(op.get("grouped", False)) == problem.grouped,
               f"kernel grouped={bool(op.get('grouped', False))}, problem grouped={problem.grouped}")
        clause("operation.k_split", op.get("k_split", "none") == problem.k_split,
               f"kernel k_split {op.get('k_split', 'none')}, problem {problem.k_split} (accepted: none, partial, "
               "atomic, streamk)")
        if problem.scale_mode == "block":
            for key in ("a_scale_order", "b_scale_order"):
                clause(f"operation.{key}", op.get(key, "row") == getattr(problem, key),
                       f"kernel reads {op.get(key, 'row')}-major block scales, problem has {getattr(problem, key)}")
        if problem.scaled:
            clause("operation.scale_block", op.get("scale_block") == problem.scale_block,
                   f"kernel scale block {op.get('scale_block')}, problem {problem.scale_block}")
        if problem.c is not None:
            clause("operation.c", op.get("c") == problem.c.name and feat.get("c_input", False),
                   f"kernel C input is {op.get('c')}, problem has C {problem.c.name}")
        if feat.get("c_input", False) and not feat.get("c_alias_d", False):
            clause("features.c_input", problem.c is not None and problem.beta != 0.0,
                   "kernel reads C (beta * C); the problem has no C or beta = 0")
        clause("features.alpha", problem.alpha == 1.0 or feat.get("alpha", False), "kernel has no alpha")
        clause("features.beta", problem.beta == 0.0 or feat.get("beta", False), "kernel has no beta * C")
        clause("features.bias", problem.bias in feat.get("bias", ["none"]),
               f"bias {problem.bias} not in {feat.get('bias', ['none'])}")
        clause("features.activation", problem.activation in feat.get("activation", ["none"]),
               f"activation {problem.activation} not in {feat.get('activation', ['none'])}")
        clause("legality.batch", problem.batch == 1 or leg.get("batch", False), "kernel is not batched")
        sizes = {"m": problem.m, "n": problem.n, "k": problem.k}
        for dim, value in sizes.items():
            div = leg.get("divisible", {}).get(dim, 1)
            clause(f"legality.divisible.{dim}", value % div == 0, f"{dim}={value} is not a multiple of {div}")
            lo = leg.get("min", {}).get(dim, 1)
            hi = leg.get("max", {}).get(dim)
            clause(f"legality.min.{dim}", value >= lo, f"{dim}={value} < {lo}")
            if hi is not None:
                clause(f"legality.max.{dim}", value <= hi, f"{dim}={value} > {hi}")
        lead = problem.lead
        for operand, mult in leg.get("ld_multiple", {}).items():
            if operand in lead:
                clause(f"legality.ld_multiple.{operand}", lead[operand] % mult == 0,
                       f"ld{operand}={lead[operand]} is not a multiple of {mult}")
        packed = {"a": problem.a_shape[1], "b": problem.b_shape[1], "c": problem.n, "d": problem.n}
        for operand, want in leg.get("ld_equal", {}).items():
            if operand in lead:
                clause(f"legality.ld_equal.{operand}", lead[operand] == want,
                       f"ld{operand}={lead[operand]}, the kernel needs ld{operand}={want}")
        for operand in leg.get("packed", []):
            clause(f"legality.packed.{operand}", lead[operand] == packed[operand],
                   f"ld{operand}={lead[operand]}, the kernel needs packed {operand} (ld{operand}={packed[operand]})")
        kinds = {"a": problem.a, "b": problem.b, "c": problem.c or problem.d, "d": problem.d}
        for index, arg in enumerate(self.args):
            role = arg["role"]
            in_bytes = arg.get("unit", self.data["abi"]["strides_in"]) == "bytes"
            if role in ("lda", "ldb", "ldc", "ldd"):
                value = kinds[role[2]].storage_bytes(lead[role[2]]) if in_bytes else lead[role[2]]
                bits = 8 * arg["size"] - (0 if arg.get("type") == "u32" else 1)
                clause(f"abi.args[{index}]", value < 1 << bits,
                       f"{role} = {value} ({'bytes' if in_bytes else 'elements'}) does not fit argument {arg['name']} "
                       f"({arg['size']} bytes)")
        for operand, need in leg.get("align_bytes", {}).items():
            have = (align or {}).get(operand)
            if have is not None:
                clause(f"legality.align_bytes.{operand}", have % need == 0,
                       f"pointer {operand} is {have}-byte aligned, kernel needs {need}")
        return out

    def admits(self, problem: GemmProblem, align: Mapping[str, int] | None = None) -> tuple[bool, str]:
        """(legal, first failing clause and why)."""
        for c in self.legality(problem, align):
            if not c.ok:
                return False, f"{c.name}: {c.reason}"
        return True, ""
