"""How an outlined parallel loop of a fallback function takes its inputs.

The loop's MLIR function (fallback.py) is called from Numba's host code
with the values of the host variables the loop reads. Most are passed as
they are: the entry's calling convention takes scalars, arrays and tuples of
them. Three kinds of inputs are bound another way, in a prologue of the
outlined function:

* Compile-time objects the host code took from a global, a closure variable
  or a constant (the `slice` builtin, `np`, a module held in a variable,
  `np.empty`): as arguments they would reach the lowering as their Numba
  types, not as the objects. The prologue assigns the same global again.
* Slices, also inside tuples (multi-dimensional indices): the entry has no
  parameter type for them. They are passed as the integers of Numba's slice
  struct (start, stop and, for `slice<a:b:c>`, step; `slice<a:b>` has step
  1) and rebuilt with a `slice()` call, which the MLIR lowering already
  knows (rules/views.py). Numba's struct holds the defaults of omitted
  bounds (0 and the largest intp for a positive step, the largest intp and
  the smallest for a negative one), which the lowering clamps to the axis
  as it clamps any bound, so the view is the one Numba's would be.
* Lists of scalars (a reflected-list argument, a list the host code built):
  passed as a 1-d array over the list's items (its payload, in place), so
  that reads, writes and `len` inside the loop are an array's. A reflected
  list the loop writes is marked dirty, so that Numba copies it back to the
  Python list. Lists of other items stay unsupported (a clear error).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Optional, Union

from llvmlite import ir as llir
from numba.core import ir, types
from numba.cpython.listobj import ListInstance
from numba.np.arrayobj import populate_array
from numba.parfors.parfor import Parfor

from ..lowering.types import is_scalar, is_static

# A step of a parameter's path into its host value: an int (a tuple item),
# a slice struct's field name, or ITEMS (a list's items as an array).
Step = Union[int, str]
ITEMS = "items"


@dataclass(frozen=True)
class Parameter:
    """One argument of the outlined function: the host variable `input`, or
    the part of it that `path` reaches."""
    name: str                   # the argument variable of the outlined function
    input: str                  # the host variable it comes from
    type: types.Type
    path: tuple[Step, ...] = ()

    @property
    def whole(self) -> bool:
        return not self.path


@dataclass
class Binding:
    """The outlined function's arguments and the prologue binding its inputs."""
    parameters: list[Parameter] = field(default_factory=list)
    prologue: list[ir.Assign] = field(default_factory=list)
    # types of the variables it adds, and of the lists it binds as arrays
    typemap: dict = field(default_factory=dict)
    calltypes: dict = field(default_factory=dict)    # signatures of the calls it adds


def host_definitions(func_ir) -> dict[str, list]:
    """The values assigned to each variable anywhere in the host function,
    parfor init blocks and bodies included (where Numba hoists globals)."""
    found: dict[str, list] = {}

    def walk(blocks) -> None:
        for block in blocks:
            for stmt in block.body:
                if isinstance(stmt, ir.Assign):
                    found.setdefault(stmt.target.name, []).append(stmt.value)
                elif isinstance(stmt, Parfor):
                    walk([stmt.init_block, *stmt.loop_body.values()])
    walk(func_ir.blocks.values())
    return found


def bind_inputs(inputs: list[str], typemap: dict, definitions: dict, typingctx,
                scope: ir.Scope, loc: ir.Loc) -> Binding:
    """The arguments and prologue through which the outlined function gets
    `inputs` (host variables, typed in `typemap`)."""
    builder = _PrologueBuilder(typemap, definitions, typingctx, scope, loc)
    for name in inputs:
        builder.bind(name)
    return builder.binding


def contains_slice(ty: types.Type) -> bool:
    if isinstance(ty, types.SliceType):
        return True
    return isinstance(ty, types.BaseTuple) and any(contains_slice(t) for t in ty.types)


def is_list_of_scalars(ty: types.Type) -> bool:
    return isinstance(ty, types.List) and is_scalar(types.unliteral(ty.dtype))


def items_array_type(ty: types.List) -> types.Array:
    return types.Array(types.unliteral(ty.dtype), 1, "C")


def slice_fields(ty: types.SliceType) -> tuple[str, ...]:
    """The fields of Numba's slice struct that carry information: a slice
    of two members (`slice<a:b>`, a literal without step) has step 1."""
    return ("start", "stop") if ty.members == 2 else ("start", "stop", "step")


class _PrologueBuilder:
    def __init__(self, typemap, definitions, typingctx, scope, loc):
        self.typemap, self.definitions = typemap, definitions
        self.typingctx, self.scope, self.loc = typingctx, scope, loc
        self.binding = Binding()
        self._bound: set[str] = set()
        self._slice_fn: Optional[ir.Var] = None

    def bind(self, name: str) -> None:
        if name in self._bound:          # the base of an attribute bound before
            return
        ty = self.typemap[name]
        value = self._compile_time_definition(name) if is_static(ty) else None
        if value is not None:
            self._assign(value, name)
        elif contains_slice(ty):
            self._rebuild(name, name, ty, ())
        elif is_list_of_scalars(ty):
            self._argument(name, name, items_array_type(ty), (ITEMS,))
        else:
            self._argument(name, name, ty, ())

    # -- compile-time objects --------------------------------------------------

    def _compile_time_definition(self, name: str, depth: int = 0):
        """A copy of the host's only definition of `name` if it is a
        global, closure variable or constant, or an attribute of one (a
        hoisted `np.empty`); None otherwise."""
        values = self.definitions.get(name, [])
        if len(values) != 1 or depth > 8:
            return None
        value = values[0]
        if isinstance(value, (ir.Global, ir.FreeVar, ir.Const)):
            return copy.copy(value)
        if not (isinstance(value, ir.Expr) and value.op == "getattr"):
            return None
        base = value.value.name
        if base not in self._bound:
            if not is_static(self.typemap.get(base)):
                return None
            base_value = self._compile_time_definition(base, depth + 1)
            if base_value is None:
                return None
            self._assign(base_value, base)
        return ir.Expr.getattr(ir.Var(self.scope, base, self.loc), value.attr, self.loc)

    # -- slices ------------------------------------------------------------------

    def _rebuild(self, input_name: str, target: str, ty: types.Type, path: tuple) -> None:
        """Bind `target` (of `ty`, the part `path` of `input_name`) from
        arguments: slices from their integers, tuples item by item."""
        if isinstance(ty, types.SliceType):
            fields = [self._argument(input_name, f"{target}.{name}", types.intp, path + (name,))
                      for name in slice_fields(ty)]
            self._assign(self._slice_call(fields), target)
        elif isinstance(ty, types.BaseTuple) and contains_slice(ty):
            items = []
            for i, item_ty in enumerate(ty.types):
                item = f"{target}.{i}"
                self.binding.typemap[item] = item_ty
                self._rebuild(input_name, item, item_ty, path + (i,))
                items.append(ir.Var(self.scope, item, self.loc))
            self._assign(ir.Expr.build_tuple(items, self.loc), target)
        else:
            self._argument(input_name, target, ty, path)

    def _slice_call(self, fields: list[ir.Var]) -> ir.Expr:
        fn = self._slice_function()
        call = ir.Expr.call(fn, fields, (), self.loc)
        self.binding.calltypes[call] = self.typingctx.resolve_function_type(
            self.binding.typemap[fn.name], (types.intp,) * len(fields), {})
        return call

    def _slice_function(self) -> ir.Var:
        if self._slice_fn is None:
            self._slice_fn = ir.Var(self.scope, "$loop_input_slice", self.loc)
            self.binding.typemap[self._slice_fn.name] = self.typingctx.resolve_value_type(slice)
            self._assign(ir.Global("slice", slice, self.loc), self._slice_fn.name)
        return self._slice_fn

    # -- statements ------------------------------------------------------------

    def _argument(self, input_name: str, name: str, ty: types.Type, path: tuple) -> ir.Var:
        """A new argument of the outlined function, bound to the variable `name`."""
        index = len(self.binding.parameters)
        self.binding.parameters.append(Parameter(name, input_name, ty, path))
        self.binding.typemap.setdefault(name, ty)
        self._assign(ir.Arg(name, index, self.loc), name)
        return ir.Var(self.scope, name, self.loc)

    def _assign(self, value, target: str) -> None:
        self._bound.add(target)
        self.binding.prologue.append(
            ir.Assign(value, ir.Var(self.scope, target, self.loc), self.loc))


def parameter_value(lowerer, parameter: Parameter, value):
    """The value of `parameter` in Numba's host code, from `value`, the
    whole host variable: a tuple item or a field of a slice struct."""
    builder, context = lowerer.builder, lowerer.context
    ty = lowerer.typeof(parameter.input)
    for step in parameter.path:
        if isinstance(step, int):
            value, ty = builder.extract_value(value, step), ty.types[step]
        elif step == ITEMS:
            value = _items_as_array(context, builder, ty, value)
        else:
            value = getattr(context.make_helper(builder, ty, value), step)
    return value


def _items_as_array(context, builder, ty: types.List, value):
    """A Numba array over the items of a list (no copy; no owner: the list
    outlives the call)."""
    items = ListInstance(context, builder, ty, value)
    array_ty = items_array_type(ty)
    array = context.make_array(array_ty)(context, builder)
    itemsize = llir.Constant(llir.IntType(64),
                             context.get_abi_sizeof(context.get_data_type(array_ty.dtype)))
    populate_array(array, data=builder.bitcast(items.data, array.data.type),
                   shape=[items.size], strides=[itemsize], itemsize=itemsize, meminfo=None)
    return array._getvalue()


def mark_written_list(lowerer, parameter: Parameter) -> None:
    """After a loop that writes the list: Numba reflects a dirty list back
    to its Python list on return."""
    ty = lowerer.typeof(parameter.input)
    if parameter.path == (ITEMS,) and ty.reflected:
        items = ListInstance(lowerer.context, lowerer.builder, ty,
                             lowerer.loadvar(parameter.input))
        items.set_dirty(True)
