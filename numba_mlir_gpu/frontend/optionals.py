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

An array copied into an Optional(array) variable (`z.2 = z.1`, where the
paths of `z = None` and `z = a` join) goes through `wrap_optional(z.1)`:
Numba's array analysis takes the copy for an equivalence of the array's
extents with the Optional, which it sees as a scalar, and asserts for 2-d
arrays (lowering/optionals.py).

Operands whose type in the signature stays Optional (`z is None`, a jitted
function called with `z`, which gets an Optional parameter as in Numba) are
left as they are.
"""
from __future__ import annotations

from numba.core import ir, types
from numba.core.compiler_machinery import FunctionPass, register_pass

from ..lowering.optionals import unwrap_optional, wrap_optional

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
    """`unwrap_optional` calls for Optional(array) operands used as arrays,
    `wrap_optional` calls for arrays copied into Optional(array) variables."""

    _name = "numba_mlir_gpu_unwrap_optional_arrays"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        typemap, calltypes = state.typemap, state.calltypes
        if not any(_is_optional_array(t) for t in typemap.values()):
            return False
        func_ir, typingctx = state.func_ir, state.typingctx
        unwrap = typingctx.resolve_value_type(unwrap_optional)
        wrap = typingctx.resolve_value_type(wrap_optional)

        def convert(body, function, fnty, var, result_ty, name):
            """`name = function(var)` appended to body; the new variable."""
            loc = var.loc
            fn = var.scope.redefine(f"${function.__name__}", loc)
            typemap[fn.name] = fnty
            result = var.scope.redefine(name, loc)
            typemap[result.name] = result_ty
            call = ir.Expr.call(fn, [var], (), loc)
            calltypes[call] = fnty.get_call_type(typingctx, (typemap[var.name],), {})
            for target, value in ((fn, ir.Global(function.__name__, function, loc)),
                                  (result, call)):
                body.append(ir.Assign(value, target, loc))
                func_ir._definitions[target.name] = [value]
            return result

        changed = False
        for block in state.func_ir.blocks.values():
            body = []
            for stmt in block.body:
                if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Var) and \
                        _is_optional_array(typemap.get(stmt.target.name)) and \
                        isinstance(typemap.get(stmt.value.name), types.Array):
                    copied = stmt.value
                    stmt.value = convert(body, wrap_optional, wrap, copied,
                                         types.Optional(typemap[copied.name]),
                                         f"{copied.name}.wrapped")
                    func_ir._definitions[stmt.target.name] = [
                        stmt.value if d is copied else d
                        for d in func_ir._definitions.get(stmt.target.name, [])]
                    changed = True
                for holder, key, sig, index in _operands(stmt, calltypes):
                    var = holder[key] if isinstance(key, int) else getattr(holder, key)
                    ty = typemap.get(var.name)
                    if not _is_optional_array(ty) or isinstance(_wanted(sig, index),
                                                                types.Optional):
                        continue
                    if isinstance(holder, ir.Expr) and holder.op == "getattr" \
                            and holder.attr == "__class__":
                        continue
                    unwrapped = convert(body, unwrap_optional, unwrap, var, ty.type,
                                        f"{var.name}.unwrapped")
                    if isinstance(key, int):
                        holder[key] = unwrapped
                    else:
                        setattr(holder, key, unwrapped)
                    changed = True
                body.append(stmt)
            block.body = body
        return changed
