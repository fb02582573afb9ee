"""aiter kernel families as data: `specs/aiter/families/*.yaml` (one file per family, each fact citing the aiter
host source it comes from) plus the family's listing CSV in the release give one jitgemm contract per kernel.

A family file holds a contract template (operation, abi, launch, legality, features, tile) whose strings may name
a listing row's fields in braces (`"ceil(n/{tile_n})"`; a string that is only `"{tile_n}"` becomes the number),
`kernels` (where the rows come from: a listing CSV per arch with a column map, or explicit `rows`) and
`variants` (`when: {field: value}` sections deep-merged over the template for the rows that match; a list item
with its own `when` is kept only for the rows that match). The next
aiter release's families are new files here, never code.
"""

from __future__ import annotations

import copy
import csv
import functools
import io
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from jitgemm.util.safe_yaml import load_yaml

_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
TEMPLATE_KEYS = ("operation", "abi", "launch", "legality", "features", "tile")


class FamilyError(ValueError):
    """A family file that cannot be read: the message names the file and key."""


@dataclass(frozen=True)
class Family:
    """One family description (`data` as read from its YAML file)."""

    name: str
    path: str
    data: Mapping[str, Any] = field(repr=False)

    @property
    def archs(self) -> list[str]:
        return list(self.data["kernels"].get("archs", []))

    @property
    def listing(self) -> str | None:
        return self.data["kernels"].get("listing")

    @property
    def sources(self) -> Mapping[str, str]:
        return self.data.get("sources", {})


@functools.cache
def families() -> tuple[Family, ...]:
    """Every family file bundled with jitgemm (jitgemm.specs/aiter/families/*.yaml), by name."""
    folder = resources.files("jitgemm.specs").joinpath("aiter/families")
    out = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            out.append(load_family(entry.read_text(encoding="utf-8"), f"specs/aiter/families/{entry.name}"))
    return tuple(out)


def load_family(text: str, path: str) -> Family:
    """Parse and check one family file (the keys the reader needs; the contract schema checks the rest)."""
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise FamilyError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise FamilyError(f"{path}: a family file is a mapping")
    for key in ("family", "kernels", "operation", "abi", "launch"):
        if key not in data:
            raise FamilyError(f"{path}: no `{key}`")
    kernels = data["kernels"]
    if not isinstance(kernels, dict) or not ("listing" in kernels or "rows" in kernels):
        raise FamilyError(f"{path}: kernels needs `listing` (a CSV per arch) or `rows`")
    for i, v in enumerate(data.get("variants", [])):
        if not isinstance(v, dict) or not isinstance(v.get("when"), dict):
            raise FamilyError(f"{path}: variants.{i} needs a `when` mapping")
    return Family(str(data["family"]), path, data)


def _matches(when: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    return all(str(row.get(k)) == str(v) for k, v in when.items())


def _substitute(node: Any, row: Mapping[str, Any], where: str) -> Any:
    """Fill `{field}`s from the row; a list item that is a mapping with `when` is kept only for matching rows."""
    if isinstance(node, dict):
        return {k: _substitute(v, row, f"{where}.{k}") for k, v in node.items()}
    if isinstance(node, list):
        out = []
        for i, v in enumerate(node):
            if isinstance(v, dict) and "when" in v:
                if not _matches(v["when"], row):
                    continue
                v = {key: val for key, val in v.items() if key != "when"}
            out.append(_substitute(v, row, f"{where}.{i}"))
        return out
    if isinstance(node, str):
        whole = _FIELD.fullmatch(node)
        if whole:
            if whole.group(1) not in row:
                raise FamilyError(f"{where}: {{{whole.group(1)}}} is not a field of the listing row ({', '.join(row)})")
            return row[whole.group(1)]

        def one(m: re.Match) -> str:
            if m.group(1) not in row:
                raise FamilyError(f"{where}: {{{m.group(1)}}} is not a field of the listing row ({', '.join(row)})")
            return str(row[m.group(1)])

        return _FIELD.sub(one, node)
    return node


def _merge(base: Any, over: Any) -> Any:
    """Deep merge: mappings merge key by key, anything else (lists included) is replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base.get(k), v) if k in base else copy.deepcopy(v)
        return out
    return copy.deepcopy(over)


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        return text


def listing_rows(family: Family, arch: str, read_csv) -> tuple[list[dict], str | None]:
    """The family's kernel rows for one arch, as {name, file, tile_m, tile_n, split_k, preshuffle, ...} with the
    family's column map applied; `read_csv(rel)` returns a listing's text or None. Returns (rows, listing path or
    None); rows outside the family's `where` filter are left out (the inventory lists them as uncovered)."""
    spec = family.data["kernels"]
    if "rows" in spec:
        return [dict(r) for r in spec["rows"]], None
    rel = spec["listing"].format(arch=arch)
    text = read_csv(rel)
    if text is None:
        return [], rel
    columns = spec.get("columns", {})
    where = spec.get("where", {})
    out = []
    for raw in csv.DictReader(io.StringIO(text)):
        raw = {k.strip(): (v or "").strip() for k, v in raw.items() if k}
        if any(str(raw.get(col)) != str(val) for col, val in where.items()):
            continue
        row = {ours: _number(raw.get(theirs, "")) for ours, theirs in columns.items()}
        row.setdefault("split_k", 0)
        row.setdefault("preshuffle", 0)
        out.append(row)
    return out, rel


def contract_data(family: Family, arch: str, row: Mapping[str, Any], code_sha256: str, version: str) -> dict:
    """The contract of one kernel: the family template with the row's variants merged and its fields filled."""
    data = family.data
    template = {k: copy.deepcopy(data[k]) for k in TEMPLATE_KEYS if k in data}
    for v in data.get("variants", []):
        if _matches(v["when"], row):
            template = _merge(template, {k: val for k, val in v.items() if k != "when"})
    fields = {"tile_k": data["kernels"].get("tile_k", 0), **row}
    filled = _substitute(template, fields, family.path)
    filled.setdefault("legality", {})
    filled.setdefault("features", {})
    contract = {
        "contract_version": 1,
        "identity": {"generator": "aiter", "generator_version": version or "unknown", "kernel": row["name"],
                     "target": arch, "source": f"{family.path} ({family.sources.get('host', '')})",
                     "code_sha256": code_sha256},
        **filled,
    }
    return contract
