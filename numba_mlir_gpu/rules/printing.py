"""`print(a, "text", b)`: numbers, booleans and constant strings. In host
code written as Numba's print writes them (lowering/printing.py's Python
callbacks); inside a prange body or a kernel with printf, one call a line
(lowering/printing.printf_line: the callbacks would wait there for the
interpreter lock that the calling thread holds)."""
from __future__ import annotations

import itertools

from numba.core import ir as nir
from numba.core import types

from .._mlir import ir
from ..lowering import printing
from ..lowering.errors import UnsupportedConstructError
from ..lowering.registry import stmt_rules
from ..lowering.types import is_scalar
from ..lowering.values import PyValue

_texts = itertools.count()


@stmt_rules.register(nir.Print)
def lower_print(lw, stmt: nir.Print) -> None:
    if stmt.vararg is not None:
        raise UnsupportedConstructError("print(*args)", stmt.loc)
    module = lw.mlower.module
    items = list(_items(lw, stmt))
    if lw.parallel_depth > 0:
        _print_in_parallel_code(lw, module, items, stmt.loc)
        return
    for kind, value in items:
        if kind == "text":
            _text(lw, module, value)
        else:
            printing.print_number(module, value, kind)
    printing.print_end(module)


def _items(lw, stmt: nir.Print):
    """("text", str) for constants, (numba type, value) for numbers."""
    where = " in a prange body or a kernel" if lw.parallel_depth > 0 else ""
    for i, var in enumerate(stmt.args):
        if i in stmt.consts:
            yield "text", str(stmt.consts[i])
            continue
        ty = types.unliteral(lw.typeof(var.name))
        value = lw.read(var)
        if isinstance(value, PyValue):
            yield "text", str(value.obj)
        elif isinstance(value, ir.Value) and is_scalar(ty) and \
                isinstance(ty, (types.Integer, types.Float, types.Boolean)):
            yield ty, value
        else:
            raise UnsupportedConstructError(f"print() of {ty}{where}", stmt.loc)


def _print_in_parallel_code(lw, module, items: list, loc) -> None:
    if sum(isinstance(kind, types.Boolean) for kind, _ in items) > \
            printing.MAX_PRINTED_BOOLEANS:
        raise UnsupportedConstructError(
            f"print() of more than {printing.MAX_PRINTED_BOOLEANS} booleans in a prange body "
            "or a kernel", loc)
    kernel = getattr(lw, "kernel", None)
    gpu = kernel.gpu if kernel is not None else bool(getattr(lw.target, "gpu", False))
    printing.printf_line(module, items, gpu, f"{lw.name}_printf_{next(_texts)}")


def _text(lw, module, text: str) -> None:
    printing.print_text(module, text, f"{lw.name}_text_{next(_texts)}")
