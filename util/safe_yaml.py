"""The one way the project reads YAML it did not write itself: bounded in size, nesting depth and the number of
nodes after aliases are expanded.

PyYAML's safe loaders already refuse `!!python/*` tags, but they expand aliases: nine lines of "billion laughs"
(each level a list of nine aliases to the level before) become 10**9 nodes, and a contract with such a `tile`
passed `qualify` and then grew to gigabytes in `json.dumps`. Deep nesting (`[` x 5000) reaches Python's recursion
limit in the composer. So the event stream — parsed by libyaml when PyYAML has it, without building anything —
is walked first, counting every node as often as aliases make it appear; only a document inside the bounds is
then loaded. Every YAML file the project reads (contracts and their sidecars, kernel metadata in `.s` files,
target profiles) comes through `load_yaml`. The error is a `yaml.MarkedYAMLError`, so callers that already report
YAML errors with their line and column report these the same way.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_BYTES = 16 << 20  # a contract is a few KiB, AMDGPU metadata of a large code object a few hundred
MAX_DEPTH = 64  # collections inside collections: contracts nest 4 deep, profiles 5
MAX_NODES = 1_000_000  # scalars and collections, aliases expanded


class YamlRefused(yaml.MarkedYAMLError):
    """A YAML document over one of the bounds (size, depth, expanded nodes); `problem_mark` says where."""


def _fast_loader() -> type:
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def check_bounds(text: str, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> None:
    """Raise YamlRefused when the documents of `text` nest deeper than `max_depth` or expand (aliases counted
    as many times as they occur) to more than `max_nodes` nodes; yaml.YAMLError for malformed text."""
    sizes: dict[str, int] = {}  # anchor -> nodes its node expands to
    stack: list[list] = []  # open collections: [anchor, nodes so far]
    total = 0
    for event in yaml.parse(text, Loader=_fast_loader()):
        if isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            if isinstance(event, yaml.AliasEvent):
                if event.anchor not in sizes:  # an undefined alias: the loader says so with its mark
                    continue
                n = sizes[event.anchor]
            else:
                n = 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            total += n
            if stack:
                stack[-1][1] += n
        elif isinstance(event, yaml.CollectionStartEvent):
            stack.append([event.anchor, 1])
            if len(stack) > max_depth:
                raise YamlRefused(problem=f"nested deeper than {max_depth} levels", problem_mark=event.start_mark)
            total += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, n = stack.pop()
            if anchor is not None:
                sizes[anchor] = n
            if stack:
                stack[-1][1] += n
        elif isinstance(event, yaml.DocumentStartEvent):
            sizes.clear()  # anchors are per document
        if total > max_nodes:
            raise YamlRefused(problem=f"more than {max_nodes} nodes once aliases are expanded (an alias bomb?)",
                              problem_mark=event.start_mark)


def load_yaml(text: str | bytes, *, loader: type | None = None, max_bytes: int = MAX_BYTES,
              max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> Any:
    """The one document in `text`, loaded by `loader` (default: libyaml's safe loader when available) after
    `check_bounds`. Bytes must be UTF-8. Raises yaml.YAMLError (YamlRefused for a bound) — never RecursionError,
    never a billion nodes."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) > max_bytes:
            raise YamlRefused(problem=f"{len(text)} bytes, over the {max_bytes}-byte limit for YAML")
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise YamlRefused(problem=f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if len(text) > max_bytes:
        raise YamlRefused(problem=f"{len(text)} characters, over the {max_bytes}-character limit for YAML")
    try:
        check_bounds(text, max_depth=max_depth, max_nodes=max_nodes)
        return yaml.load(text, Loader=loader or _fast_loader())  # noqa: S506 (a safe loader, or the caller's)
    except RecursionError:  # a safety net: the depth bound is far below Python's recursion limit
        raise YamlRefused(problem="nested too deeply") from None


__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "YamlRefused", "check_bounds", "load_yaml"]
