"""Optional(array) operands made explicit before Numba's rewrites.

Numba types `x + z`, `z[i]`, `z.shape` or `np.sum(z)` of a variable `z` of
type Optional(array) with the array type (its templates retry with Optional
arguments unwrapped), and its lowering casts the operand at the use:
`optional_to_any`, which raises TypeError("expected <array type>, got None").
Numba's array-expression rewrite and parfor pass look at the typemap, though:
there `z` is no array, so `x + z` became a loop whose body added the whole of
`z` to each element of `x`. This pass unwraps every such operand first
(`z.unwrapped = unwrap_optional(z)`, typed as the array: lowering/optionals.py),
so that the rewrites see an array and every lowering (ours, and Numba's for
the host fallback) checks for None where Numba's own lowering does.

Operands whose type in the signature stays Optional (`z is None`, a jitted
function called with `z`, which gets an Optional parameter as in Numba) are
left as they are.
"""
from __future__ import annotations

from numba.core import ir, types
from numba.core.compiler_machinery import FunctionPass, register_pass

from ..lowering.optionals import unwrap_optional

# expressions whose operand (`value`) is cast to the array type, signature or not
_VALUE_OPS = ("getattr", "getitem", "static_getitem", "getiter", "unary")


def _is_optional_array(ty) -> bool:
    return isinstance(ty, types.Optional) and isinstance(ty.type, types.Array)


def _wanted(sig, index: int):
    """The type the signature gives operand `index` (None when unknown)."""
    if sig is None or index >= len(sig.args):
        return None
    return sig.args[index]


def _operands(stmt, calltypes) -> list[tuple]:
    """(holder, attribute or index, position in the signature) of the
    operands of `stmt` that its lowering casts to the signature's type."""
    found = []
    if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
        found.append((stmt, "target", calltypes.get(stmt), 0))
    elif isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr):
        expr = stmt.value
        sig = calltypes.get(expr)
        if expr.op in ("binop", "inplace_binop"):
            found += [(expr, "lhs", sig, 0), (expr, "rhs", sig, 1)]
        elif expr.op in _VALUE_OPS:
            found.append((expr, "value", sig, 0))
        elif expr.op == "call":
            if not isinstance(expr.args, list):
                expr.args = list(expr.args)
            found += [(expr.args, i, sig, i) for i in range(len(expr.args))]
    return found


@register_pass(mutates_CFG=False, analysis_only=False)
class UnwrapOptionalArrays(FunctionPass):
    """`unwrap_optional` calls for Optional(array) operands used as arrays."""

    _name = "numba_mlir_gpu_unwrap_optional_arrays"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        typemap, calltypes = state.typemap, state.calltypes
        if not any(_is_optional_array(t) for t in typemap.values()):
            return False
        func_ir, typingctx = state.func_ir, state.typingctx
        fnty = typingctx.resolve_value_type(unwrap_optional)
        changed = False
        for block in state.func_ir.blocks.values():
            body = []
            for stmt in block.body:
                for holder, key, sig, index in _operands(stmt, calltypes):
                    var = holder[key] if isinstance(key, int) else getattr(holder, key)
                    ty = typemap.get(var.name)
                    if not _is_optional_array(ty) or isinstance(_wanted(sig, index),
                                                                types.Optional):
                        continue
                    if isinstance(holder, ir.Expr) and holder.op == "getattr" \
                            and holder.attr == "__class__":
                        continue
                    loc = var.loc
                    fn = var.scope.redefine("$unwrap_optional", loc)
                    typemap[fn.name] = fnty
                    unwrapped = var.scope.redefine(f"{var.name}.unwrapped", loc)
                    typemap[unwrapped.name] = ty.type
                    call = ir.Expr.call(fn, [var], (), loc)
                    calltypes[call] = fnty.get_call_type(typingctx, (ty,), {})
                    for target, value in ((fn, ir.Global("unwrap_optional", unwrap_optional,
                                                         loc)), (unwrapped, call)):
                        body.append(ir.Assign(value, target, loc))
                        func_ir._definitions[target.name] = [value]
                    if isinstance(key, int):
                        holder[key] = unwrapped
                    else:
                        setattr(holder, key, unwrapped)
                    changed = True
                body.append(stmt)
            block.body = body
        return changed
