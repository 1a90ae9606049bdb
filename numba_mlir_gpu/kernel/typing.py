"""Numba typing of the names a kernel calls (api.py): the id functions,
barrier and fences as globals; `local`, `private`, `atomic` and `group` as
namespace objects whose attributes are functions (as numba.cuda's
`cuda.local.array`). Their lowering is rules.py's."""
from __future__ import annotations

from numba.core import types
from numba.core.extending import typeof_impl
from numba.core.typing import signature
from numba.core.typing.templates import (AbstractTemplate, AttributeTemplate, infer_getattr,
                                         infer_global)
from numba.np.numpy_support import from_dtype

import numpy as np

from . import api

ID_FUNCTIONS = (api.get_global_id, api.get_local_id, api.get_group_id, api.get_global_size,
                api.get_local_size, api.get_num_groups)
FENCES = (api.barrier, api.mem_fence)
ATOMIC_OPS = {"add": api.atomic.add, "sub": api.atomic.sub, "min": api.atomic.min,
              "max": api.atomic.max, "exchange": api.atomic.exchange, "exch": api.atomic.exch,
              "cas": api.atomic.cas}
GROUP_OPS = {"reduce_add": api.group.reduce_add, "reduce_min": api.group.reduce_min,
             "reduce_max": api.group.reduce_max, "broadcast": api.group.broadcast,
             "shuffle_idx": api.group.shuffle_idx, "shuffle_down": api.group.shuffle_down,
             "shuffle_up": api.group.shuffle_up, "shuffle_xor": api.group.shuffle_xor}
ARRAY_MAKERS = {"local": api.local.array, "private": api.private.array}
ATOMIC_TYPES = (types.int32, types.int64, types.float32, types.float64)


class KernelNamespace(types.Dummy):
    """The type of `local`, `private`, `atomic` or `group` in compiled code."""

    def __init__(self, name: str):
        self.namespace = name
        super().__init__(name=f"kernel.{name}")


@typeof_impl.register(api._Namespace)
def _typeof_namespace(value, context):
    return KernelNamespace(value._name)


def _integer(ty) -> bool:
    return isinstance(types.unliteral(ty), types.Integer)


def call_template(key, typer):
    """A typing template for the callable `key` whose signature `typer(args)`
    gives (None: not these arguments)."""
    class Template(AbstractTemplate):
        def generic(self, args, kws):
            if kws:
                return None
            return typer(args)

        def get_impl_key(self, sig):
            return self.key
    Template.key = key
    Template.__name__ = f"Kernel_{getattr(key, '__name__', 'fn')}"
    return Template


def _id_signature(args):
    if len(args) == 1 and _integer(args[0]):
        return signature(types.intp, *args)
    return None


def _fence_signature(args):
    if len(args) <= 1 and all(_integer(a) for a in args):
        return signature(types.none, *args)
    return None


for _fn in ID_FUNCTIONS:
    infer_global(_fn)(call_template(_fn, _id_signature))
for _fn in FENCES:
    infer_global(_fn)(call_template(_fn, _fence_signature))


def constant_shape(ty):
    """The shape a `shape` argument of this type stands for, if constant."""
    ty_u = ty
    if isinstance(ty_u, types.IntegerLiteral):
        return (ty_u.literal_value,)
    if isinstance(ty_u, types.BaseTuple) and all(isinstance(t, types.IntegerLiteral)
                                                 for t in ty_u.types):
        return tuple(t.literal_value for t in ty_u.types)
    return None


def dtype_of(ty):
    """The element type a `dtype` argument (np.float32, a dtype, ...) names."""
    if isinstance(ty, types.NumberClass):
        return ty.instance_type
    if isinstance(ty, types.DType):
        return ty.dtype
    if isinstance(ty, types.StringLiteral):
        try:
            return from_dtype(np.dtype(ty.literal_value))
        except TypeError:
            return None
    return None


def _array_signature(args):
    """Any shape typed here: a non-constant one is refused with its line when
    lowered (rules.py), where the location is known."""
    if len(args) != 2:
        return None
    shape, dtype = args
    element = dtype_of(dtype)
    if element is None:
        return None
    fixed = constant_shape(shape)
    if fixed is not None:
        ndim = len(fixed)
    elif _integer(shape):
        ndim = 1
    elif isinstance(shape, types.BaseTuple) and all(_integer(t) for t in shape.types):
        ndim = len(shape.types)
    else:
        return None
    return signature(types.Array(element, ndim, "C"), shape, dtype)


def _index_ok(array, index) -> bool:
    if _integer(index):
        return array.ndim == 1
    return isinstance(index, types.BaseTuple) and len(index.types) == array.ndim and \
        all(_integer(t) for t in index.types)


def _atomic_signature(op: str):
    """Any element type typed here, so that an unsupported one is refused
    naming the line when lowered (rules.py)."""
    def typer(args):
        count = 4 if op == "cas" else 3
        if len(args) != count or not isinstance(args[0], types.Array):
            return None
        array = args[0]
        if not _index_ok(array, args[1]):
            return None
        values = args[2:]
        if not all(isinstance(types.unliteral(v), (types.Number, types.Boolean)) for v in values):
            return None
        return signature(array.dtype, *args)
    return typer


def _value_signature(extra: int):
    def typer(args):
        if len(args) != 1 + extra:
            return None
        value = types.unliteral(args[0])
        if not isinstance(value, (types.Number, types.Boolean)):
            return None
        if extra and not _integer(args[1]):
            return None
        return signature(value, *([value] + list(args[1:])))
    return typer


_FUNCTIONS = {}
for _name, _fn in ARRAY_MAKERS.items():
    _FUNCTIONS[(_name, "array")] = types.Function(call_template(_fn, _array_signature))
for _name, _fn in ATOMIC_OPS.items():
    _FUNCTIONS[("atomic", _name)] = types.Function(
        call_template(_fn, _atomic_signature("exchange" if _name == "exch" else _name)))
for _name, _fn in GROUP_OPS.items():
    _FUNCTIONS[("group", _name)] = types.Function(
        call_template(_fn, _value_signature(0 if _name.startswith("reduce") else 1)))


@infer_getattr
class NamespaceAttributes(AttributeTemplate):
    key = KernelNamespace

    def generic_resolve(self, ty, attr):
        return _FUNCTIONS.get((ty.namespace, attr))
