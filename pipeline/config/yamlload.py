"""Reading a config file as bounded YAML data: ``yaml.safe_load`` with limits an adversary cannot get around.

- the file: at most ``MAX_BYTES`` and UTF-8;
- nesting: at most ``MAX_DEPTH`` levels, checked while the document is composed (before Python's own
  recursion limit could be reached);
- aliases (``*name``): allowed, because a config shares criteria lists with them
  (configs/lange2002_table1.yaml), but the document they expand to is bounded: at most ``MAX_NODES``
  values and ``MAX_CHARACTERS`` characters of scalars, counted as each node is composed (each node's
  expanded size is the sum of its children's, so a 688-byte "billion laughs" is refused after reading
  a few dozen nodes, instead of being expanded by whatever walks it later). An alias inside its own
  anchor (a cycle) is refused too;
- keys: a key repeated in one mapping is refused (YAML would silently keep the last one);
- integers: at most 64 bits (a 5000-digit integer is refused before Python converts it).

Every refusal is a :class:`~ordercube.pipeline.errors.ConfigError` naming the file and the line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.files.inputfile import read_input

MAX_BYTES = 1 << 20
MAX_DEPTH = 32
MAX_NODES = 100_000
MAX_CHARACTERS = 4 << 20
MAX_INTEGER = 2**63 - 1
MERGE = "tag:yaml.org,2002:merge"


class _Refused(Exception):
    def __init__(self, node_or_mark: Any, problem: str, fix: str) -> None:
        mark = getattr(node_or_mark, "start_mark", node_or_mark)
        self.line = None if mark is None else mark.line + 1
        self.problem, self.fix = problem, fix
        super().__init__(problem)


class BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with the bounds of the module docstring."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, tuple[int, int, int, Node]] = {}  # id -> (values, characters, depth, the node)

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            node = super().compose_node(parent, index)
            if id(node) not in self._sizes:
                raise _Refused(event.start_mark, f"the alias *{event.anchor} is inside its own anchor (a cycle)",
                               "refer only to anchors that are complete")
            return node
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Refused(self.peek_event().start_mark, f"nested deeper than {MAX_DEPTH} levels",
                           "flatten the document: a config needs a few levels")
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._measure(node)
        return node

    def _measure(self, node: Node) -> None:
        """The size of ``node`` with every alias expanded, from its children's (already measured) sizes."""
        if isinstance(node, ScalarNode):
            values, characters, depth = 1, len(node.value), 1
        else:
            children = ([child for pair in node.value for child in pair] if isinstance(node, MappingNode)
                        else list(node.value) if isinstance(node, SequenceNode) else [])
            sizes = [self._sizes[id(child)] for child in children]
            values = 1 + sum(size[0] for size in sizes)
            characters = sum(size[1] for size in sizes)
            depth = 1 + max((size[2] for size in sizes), default=0)
        if values > MAX_NODES or characters > MAX_CHARACTERS:
            raise _Refused(node, f"the document expands to more than {MAX_NODES:,} values or {MAX_CHARACTERS:,} "
                           "characters (aliases count once per use)", "write the config out without alias chains")
        if depth > MAX_DEPTH:
            raise _Refused(node, f"aliases nest the document deeper than {MAX_DEPTH} levels", "use fewer nested aliases")
        self._sizes[id(node)] = (values, characters, depth, node)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, MappingNode):
            lines: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == MERGE:  # '<<: *defaults' may be overridden by the mapping's own keys
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in lines:
                        raise _Refused(key_node, f"the key {key!r} appears twice in one mapping (first at line "
                                       f"{lines[key]})", "keep one of them: YAML would silently use the last")
                    lines[key] = key_node.start_mark.line + 1
                except TypeError:  # unhashable: SafeLoader refuses it with its own message
                    continue
        return super().construct_mapping(node, deep=deep)

    def construct_bounded_int(self, node: ScalarNode) -> int:
        digits = sum(character.isalnum() for character in node.value)
        # before int(): Python refuses to convert more than 4300 decimal digits, with a traceback
        value = self.construct_yaml_int(node) if digits <= 66 else None  # 0b and 64 binary digits
        if value is None or abs(value) > MAX_INTEGER:
            raise _Refused(node, f"an integer of {digits} digits ({node.value[:20]}…): integers in a config lie "
                           "within ±2^63", "give a smaller number")
        return value


BoundedLoader.add_constructor("tag:yaml.org,2002:int", BoundedLoader.construct_bounded_int)


def read_yaml(path: Path, key: str = "CONFIG") -> Any:
    """The YAML document in ``path`` as plain data; ``ConfigError`` naming the file for anything out of bounds,
    and under ``key`` for a path that is not a regular file (:func:`ordercube.pipeline.files.inputfile.read_input`)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        size = 0  # read_input says what is wrong with the path
    if size > MAX_BYTES:
        raise ConfigError(str(path), f"the file has {size:,} bytes; a config has at most {MAX_BYTES:,}",
                          "give the config file (data belongs in a file dataset: kind: file)")
    data = read_input(path, key, expected="a YAML config").data
    if len(data) > MAX_BYTES:
        raise ConfigError(str(path), f"the file has more than {MAX_BYTES:,} bytes", "give the config file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ConfigError(str(path), f"not UTF-8 text: byte 0x{data[error.start]:02x} at line {line} (offset "
                          f"{error.start})", "save the file as UTF-8") from None
    loader = BoundedLoader(text)
    try:
        node = loader.get_single_node()
        return None if node is None else loader.construct_document(node)
    except _Refused as refused:
        where = f", line {refused.line}" if refused.line else ""
        raise ConfigError(f"{path}{where}", refused.problem, refused.fix) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(str(path), f"YAML syntax error{where}: {getattr(error, 'problem', None) or error}",
                          "fix the YAML (indentation, ':' after keys, closed brackets)") from None
    finally:
        loader.dispose()
