"""Gufunc layout strings: "(m,n),(n)->(m)" as core dimension names per
operand, and the sizes a call gives those names."""
from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = r"\s*[A-Za-z_][A-Za-z0-9_]*\s*"
_GROUP = rf"\(\s*(?:{_NAME}(?:,{_NAME})*)?,?\s*\)"
_GROUPS = rf"\s*{_GROUP}(?:\s*,\s*{_GROUP})*\s*"
_LAYOUT = re.compile(rf"^(?P<ins>{_GROUPS})->(?P<outs>{_GROUPS})$")


@dataclass(frozen=True)
class Layout:
    inputs: tuple          # per input, a tuple of core dimension names
    outputs: tuple

    def __str__(self) -> str:
        def side(groups):
            return ",".join("(" + ",".join(g) + ")" for g in groups)
        return f"{side(self.inputs)}->{side(self.outputs)}"


def _groups(text: str) -> tuple:
    return tuple(tuple(n.strip() for n in g.split(",") if n.strip())
                 for g in re.findall(r"\(([^)]*)\)", text))


def parse(layout: str) -> Layout:
    if not isinstance(layout, str):
        raise TypeError(f"a gufunc layout is a string such as '(n),(n)->()', not {layout!r}")
    m = _LAYOUT.match(layout)
    if m is None:
        raise ValueError(f"bad gufunc layout string {layout!r}: expected core dimensions such "
                         "as '(m,n),(n)->(m)'")
    parsed = Layout(_groups(m["ins"]), _groups(m["outs"]))
    return parsed


def core_sizes(name: str, layout: Layout, shapes) -> dict:
    """{dimension name: size} from the inputs' shapes (their last dimensions);
    ValueError when an input has too few dimensions or sizes disagree."""
    sizes: dict = {}
    for k, (dims, shape) in enumerate(zip(layout.inputs, shapes)):
        if len(shape) < len(dims):
            raise ValueError(f"{name}: input {k} has {len(shape)} dimensions, its core "
                             f"dimensions ({','.join(dims)}) need at least {len(dims)}")
        for dim, size in zip(dims, shape[len(shape) - len(dims):]):
            if sizes.setdefault(dim, size) != size:
                raise ValueError(f"{name}: core dimension {dim!r} is {sizes[dim]} in one input "
                                 f"and {size} in input {k} (layout {layout})")
    return sizes
