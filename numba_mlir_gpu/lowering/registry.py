"""Registries of lowering rules: one small function per operation.

A rule receives the FunctionLowerer, the lowered operands and the Numba
signature of the operation, and returns the lowered result.
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


binop_rules = Registry("binary operators")       # key: operator function
unary_rules = Registry("unary operators")        # key: operator function
call_rules = Registry("calls")                   # key: the Python callee
method_rules = Registry("methods")               # key: (receiver type class, name)
attr_rules = Registry("attributes")              # key: (value type class, attr)
