"""Registries of lowering rules: one small function per operation.

The lowering core looks rules up here and never imports a rule module; the
rule modules (`numba_mlir_gpu.rules`, the parfor statement in
`numba_mlir_gpu.parallel`) fill the registries when they are imported.

Operator, call and method rules receive the FunctionLowerer, the lowered
operands, the Numba signature and the IR expression, and return the lowered
result.
"""
from __future__ import annotations

from typing import Callable, Hashable


class Registry:
    def __init__(self, name: str):
        self.name = name
        self._rules: dict[Hashable, Callable] = {}

    def register(self, *keys: Hashable) -> Callable[[Callable], Callable]:
        def decorate(rule: Callable) -> Callable:
            for key in keys:
                self._rules[key] = rule
            return rule
        return decorate

    def register_over(self, *keys: Hashable, when: Callable) -> Callable[[Callable], Callable]:
        """Register the decorated rule for the calls whose signature satisfies
        `when(sig)`, keeping each key's previous rule (if any) for the others.
        A family of types added later registers over the rules of the older
        ones this way (rules/datetimes.py)."""
        def decorate(rule: Callable) -> Callable:
            for key in keys:
                previous = self._rules.get(key)

                def dispatch(lw, args, sig, expr, _previous=previous, _key=key):
                    if when(sig) or _previous is None:
                        return rule(lw, args, sig, expr)
                    return _previous(lw, args, sig, expr)
                self._rules[key] = dispatch
            return rule
        return decorate

    def get(self, key: Hashable):
        try:
            return self._rules.get(key)
        except TypeError:       # unhashable key: no rule
            return None

    def get_by_type(self, ty, name: str):
        """The rule for (a class of `ty`'s MRO, name), most specific first."""
        for cls in type(ty).__mro__:
            rule = self._rules.get((cls, name))
            if rule is not None:
                return rule
        return None

    def __contains__(self, key: Hashable) -> bool:
        return self.get(key) is not None


# Numba IR
stmt_rules = Registry("statements")              # key: statement class; rule(lw, stmt)
expr_rules = Registry("expressions")             # key: Expr.op; rule(lw, expr, target)

# Operations on scalars and compile-time objects
binop_rules = Registry("binary operators")       # key: operator function
unary_rules = Registry("unary operators")        # key: operator function
call_rules = Registry("calls")                   # key: the Python callee
method_rules = Registry("methods")               # key: (receiver type class, name)
# Operators with a tuple operand (comparisons, concatenation, `in`), tried
# before the scalar rules: rule(lw, fn, [lhs, rhs], sig, expr)
tuple_operator_rules = Registry("operators on tuples")     # key: operator function
attr_rules = Registry("attributes")              # key: (value type class, attr)

# Operations with array operands, element by element (NumPy broadcasting)
array_operator_rules = Registry("operators on arrays")     # key: operator function
inplace_array_rules = Registry("in-place operators on arrays")   # key: operator function
ufunc_rules = Registry("ufuncs on arrays")                 # key: the np.ufunc

# Indexing arrays with more than integers; key: the index kind of
# indexing.index_kind ("view": integers and slices, "advanced": index arrays)
getitem_rules = Registry("array indexing")       # rule(lw, array, index, index_ty, result_ty, loc)
setitem_rules = Registry("array item assignment")    # rule(lw, array, index, index_ty, value, value_ty, loc)
