"""`unwrap_optional(z)`: the value an Optional holds, TypeError when None.

frontend/optionals.py puts a call of it before every use of an
Optional(array) as an array (an operator, indexing, an attribute, a NumPy
call), where Numba's lowering would cast at the use. A call, not Numba's
`cast` expression: Numba's array analysis gives a `cast` the shape of its
operand, which an Optional does not have. rules/builtins.py lowers it
(`FunctionLowerer.convert`: the flag checked, the array as it is); Numba's
lowering of host code (the fallback) runs the codegen here: Numba's own
cast, `optional_to_any`, with its message ("expected <type>, got None").
"""
from __future__ import annotations

from numba.core import types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic


@intrinsic
def unwrap_optional(typingctx, value):
    if not isinstance(value, types.Optional):
        return None

    def codegen(context, builder, sig, args):
        held = context.cast(builder, args[0], sig.args[0], sig.return_type)
        return impl_ret_borrowed(context, builder, sig.return_type, held)
    return value.type(value), codegen
