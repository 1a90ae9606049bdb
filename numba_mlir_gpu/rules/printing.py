"""`print(a, "text", b)` in host code (lowering/printing.py): numbers,
booleans and constant strings, written as Numba's print writes them. Inside
a prange body or a GPU kernel it is refused: on the CPU the workers would
wait for the interpreter lock the calling thread holds."""
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
    if lw.parallel_depth > 0:
        raise UnsupportedConstructError("print() inside a prange body or a GPU kernel",
                                        stmt.loc)
    if stmt.vararg is not None:
        raise UnsupportedConstructError("print(*args)", stmt.loc)
    module = lw.mlower.module
    for i, var in enumerate(stmt.args):
        if i in stmt.consts:
            _text(lw, module, str(stmt.consts[i]))
            continue
        ty = types.unliteral(lw.typeof(var.name))
        value = lw.read(var)
        if isinstance(value, PyValue):
            _text(lw, module, str(value.obj))
        elif isinstance(value, ir.Value) and is_scalar(ty) and \
                isinstance(ty, (types.Integer, types.Float, types.Boolean)):
            printing.print_number(module, value, ty)
        else:
            raise UnsupportedConstructError(f"print() of {ty}", stmt.loc)
    printing.print_end(module)


def _text(lw, module, text: str) -> None:
    printing.print_text(module, text, f"{lw.name}_text_{next(_texts)}")
