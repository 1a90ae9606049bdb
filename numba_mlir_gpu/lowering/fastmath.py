"""Numba's `fastmath=` option on the MLIR we emit.

Without it every floating-point operation is IEEE-exact on both targets (no
contraction into FMA, correctly rounded division and sqrt), so GPU results
match Numba's CPU compilation. With it, each arith and math operation that
takes fast-math flags gets Numba's flags (`fastmath=True` is `fast`, a set
such as `{"contract", "arcp"}` is those flags); the LLVM translation passes
them on: FMA contraction, reciprocal and approximate division, approximate
sqrt and library functions in kernels, reassociated reductions.
"""
from __future__ import annotations

from typing import Optional

from .._mlir import ir


def fastmath_flags(option) -> Optional[str]:
    """Numba's FastMathOptions as the text of an `#arith.fastmath<...>`, or None."""
    flags = sorted(getattr(option, "flags", ()) or ())
    return ",".join(flags) or None


def apply_fastmath(module: ir.Module, flags: Optional[str], callees: dict) -> None:
    """`flags` on the operations of the function being compiled; each
    callee's own (`callees`: function name -> flags or None), as Numba
    compiles each function with its own options: a helper compiled without
    fastmath keeps its NaN and infinity checks inside a fastmath caller."""
    for op in module.body.operations:
        if op.operation.name != "func.func":
            continue
        name = op.operation.attributes["sym_name"].value
        chosen = callees[name] if name in callees else flags
        if not chosen:
            continue
        attr = ir.Attribute.parse(f"#arith.fastmath<{chosen}>")

        def visit(inner, attr=attr):
            view = inner.opview
            if hasattr(type(view), "fastmath"):
                view.attributes["fastmath"] = attr
            return ir.WalkResult.ADVANCE
        op.operation.walk(visit)


def operation_flags(op) -> set:
    """The fast-math flags an operation carries ({"nnan", "afn"} for
    `#arith.fastmath<nnan,afn>`; empty without the attribute, or with none)."""
    if "fastmath" not in op.attributes:
        return set()
    text = str(op.attributes["fastmath"])
    return set(text[text.find("<") + 1:text.rfind(">")].split(",")) - {"", "none"}


def allows_approximate_functions(op) -> bool:
    """Has the operation the `afn` (or `fast`) flag?"""
    return bool(operation_flags(op) & {"fast", "afn"})
