"""Reading config YAML strictly (docs/configs.md): duplicate keys, non-finite numbers and alias bombs are user errors
with a file, a line and a key path, and each key path remembers the file that wrote it through `extends`.

PyYAML's SafeLoader keeps the last of two equal keys and reads `.inf` as a float; both silently change a run (a manifest
with `Infinity` is not even JSON), so both are refused before any merging, where the file is still known. Aliases share
one composed node, so a "billion laughs" reads in a millisecond but expands (10**9 values) in anything that walks it:
the size is counted on the node graph instead."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any, Iterator

import yaml

from evalrun.contract.errors import UsageError
from evalrun.contract.validation import key_path

MAX_EXTENDS_DEPTH = 64  # a chain this long is a mistake, not a layout
MAX_EXPANDED_VALUES = 100_000  # values a document may expand to through its aliases (a config has hundreds)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlProblem(UsageError):
    """A problem in one file: message, optional key path (the caller adds the file)."""

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.message = message
        self.path = path


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with two equal keys (YAML says keys are unique)."""


def _check_duplicates(loader: StrictLoader, node: yaml.Node, parts: tuple[Any, ...], seen: set[int]) -> None:
    """Iteratively: deep nesting is no RecursionError."""
    stack: list[tuple[yaml.Node, tuple[Any, ...]]] = [(node, parts)]
    while stack:
        current, where = stack.pop()
        if id(current) in seen:  # anchors/aliases share nodes
            continue
        seen.add(id(current))
        if isinstance(current, yaml.MappingNode):
            first: dict[Any, int] = {}
            for key_node, value_node in current.value:
                if key_node.tag == _MERGE_TAG:
                    stack.append((value_node, where))
                    continue
                scalar = isinstance(key_node, yaml.ScalarNode)
                key: Any = loader.construct_object(key_node, deep=True) if scalar else None
                try:
                    hash(key)
                except TypeError:
                    key = None
                line = key_node.start_mark.line + 1
                if key is not None and key in first:
                    raise YamlProblem(
                        f"duplicate key {key!r} at line {line} (first at line {first[key]}); "
                        "YAML keys must be unique, remove one", key_path((*where, key)))
                if key is not None:
                    first[key] = line
                stack.append((value_node, (*where, key)))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend((child, (*where, i)) for i, child in enumerate(current.value))


def check_expansion(root: yaml.Node) -> None:
    """Refuse a document whose aliases expand it past MAX_EXPANDED_VALUES values, or that contains itself,
    before anything is built from it. Each node's size is computed once, so the check costs the document's size."""
    size: dict[int, int] = {}
    open_nodes: set[int] = set()  # on the current path: reaching one again is a cycle
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        children = _children(node)
        if done:
            open_nodes.discard(id(node))
            size[id(node)] = 1 + sum(size[id(c)] for c in children)
            if size[id(node)] > MAX_EXPANDED_VALUES:
                raise YamlProblem(f"its aliases (*name) expand it to more than {MAX_EXPANDED_VALUES:,} values "
                                  f"(from line {node.start_mark.line + 1}): an alias bomb, or a config to write out "
                                  "with fewer aliases")
            continue
        if id(node) in size:
            continue
        open_nodes.add(id(node))
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise YamlProblem(f"an alias at line {child.start_mark.line + 1} refers to a value that contains it "
                                  "(a recursive structure): write the value out")
            if id(child) not in size:
                stack.append((child, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def load_strict(text: str) -> Any:
    """Parse one YAML document, refusing duplicate keys and non-finite numbers."""
    loader = StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_expansion(node)
        _check_duplicates(loader, node, (), set())
        data = loader.construct_document(node)
    finally:
        loader.dispose()
    check_finite(data)
    return data


def _walk(data: Any) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every (key path, leaf) in nested dicts and lists, iteratively."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), data)]
    seen: set[int] = set()
    while stack:
        where, value = stack.pop()
        if isinstance(value, (dict, list)):
            if id(value) in seen:
                continue
            seen.add(id(value))
            pairs = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend(((*where, k), v) for k, v in pairs)
        else:
            yield where, value


def check_finite(data: Any, prefix: tuple[Any, ...] = ()) -> None:
    """Refuse inf and nan anywhere: no setting means anything at infinity, and JSON cannot hold them."""
    for where, value in _walk(data):
        if isinstance(value, float) and not math.isfinite(value):
            raise YamlProblem(f"{value!r} is not allowed: give a finite number", key_path((*prefix, *where)))


def origins_of(data: dict[str, Any], file: Path) -> dict[tuple[Any, ...], Path]:
    """Which file wrote each key path of `data` (mappings are walked; lists are leaves)."""
    out: dict[tuple[Any, ...], Path] = {}
    stack: list[tuple[tuple[Any, ...], dict[str, Any]]] = [((), data)]
    while stack:
        where, mapping = stack.pop()
        for key, value in mapping.items():
            out[where + (key,)] = file  # not `[(*where, key)]`: mypy reads that as 3.11-only syntax
            if isinstance(value, dict):
                stack.append(((*where, key), value))
    return out


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge mappings; lists and scalars in `over` replace those in `base`. Iterative."""
    out = copy.deepcopy(base)
    stack: list[tuple[dict[str, Any], dict[str, Any]]] = [(out, over)]
    while stack:
        target, source = stack.pop()
        for key, value in source.items():
            if isinstance(value, dict) and isinstance(target.get(key), dict):
                stack.append((target[key], value))
            else:
                target[key] = copy.deepcopy(value)
    return out


def merge_origins(base: dict[tuple[Any, ...], Path], over: dict[tuple[Any, ...], Path],
                  over_data: dict[str, Any]) -> dict[tuple[Any, ...], Path]:
    """Origins after `merge`: a key the child replaces (not merges) drops the parent's entries under it."""
    out = dict(base)
    for where, file in over.items():
        value: Any = over_data
        for part in where:
            value = value[part]
        if not isinstance(value, dict):
            for old in [k for k in out if len(k) > len(where) and k[: len(where)] == where]:
                del out[old]
        out[where] = file
    return out


def origin_file(origins: dict[tuple[Any, ...], Path], path: str | None) -> Path | None:
    """The file that wrote the longest key-path prefix of a dotted `path` ('a.b[0].c')."""
    found = [(len(text), file) for where, file in origins.items()
             if path and (path == (text := key_path(where)) or path.startswith((text + ".", text + "[")))]
    return max(found, key=lambda f: f[0])[1] if found else None
