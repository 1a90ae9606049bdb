"""`unwrap_optional(z)`: the value an Optional holds, TypeError when None;
`wrap_optional(a)`: an array as an Optional.

frontend/optionals.py puts a call of it before every use of an
Optional(array) as an array (an operator, indexing, an attribute, a NumPy
call), where Numba's lowering would cast at the use. A call, not Numba's
`cast` expression: Numba's array analysis gives a `cast` the shape of its
operand, which an Optional does not have. rules/builtins.py lowers it
(`FunctionLowerer.convert`: the flag checked, the array as it is); Numba's
lowering of host code (the fallback) runs the codegen here: Numba's own
cast, `optional_to_any`, with its message ("expected <type>, got None").

`wrap_optional` stands for the copy of an array into an Optional(array)
variable (`z.2 = z.1` at the join of `z = None` and `z = a`), which Numba's
array analysis takes for an equivalence between an array's extents and the
Optional (a scalar to it): an assertion fails for 2-d arrays (in Numba's own
`parallel=True` too). Lowered as the conversion Numba's assignment makes
(`any_to_optional`).
"""
from __future__ import annotations

from numba.core import types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic


def _cast(context, builder, sig, args):
    """The argument cast to the result type (Optional <-> its array), borrowed."""
    held = context.cast(builder, args[0], sig.args[0], sig.return_type)
    return impl_ret_borrowed(context, builder, sig.return_type, held)


@intrinsic
def unwrap_optional(typingctx, value):
    if not isinstance(value, types.Optional):
        return None
    return value.type(value), _cast


@intrinsic
def wrap_optional(typingctx, value):
    if not isinstance(value, types.Array):
        return None
    return types.Optional(value)(value), _cast


# conversions that neither write their argument nor copy it
OPTIONAL_CONVERSIONS = (unwrap_optional, wrap_optional)
