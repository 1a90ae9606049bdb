"""A prange loop that is exactly a matrix product, run as one:

    for i in prange(n):
        for j in range(m):                  # or prange(m)
            acc = 0.0                       # the arrays' own type
            for k in range(p):
                acc += A[i, k] * B[k, j]    # or B[k, j] * A[i, k]; acc = acc + ...
            C[i, j] = acc

or flat, `for t in prange(n * m): i = t // m; j = t % m; ...` (the same
body), is C[:n, :m] = A[:n, :p] @ B[:p, :m], computed by the BLAS the
target's matrix products use (lowering/blas.py: cuBLAS on the GPU, Numba's
BLAS on the CPU), when the code runs: the bounds fit the arrays (and the
flat loop's length is a whole number of rows), C's rows are contiguous, and
C shares no memory with A or B; otherwise the loop runs as written.

The body must be that contraction and nothing else, with no variable of it
read after the loop, and the accumulator of the arrays' element type, or
float64 over float32 arrays: then the operands are widened (exactly) for a
float64 gemm, so each product is exact instead of rounded to float32
first, and each result is rounded once into C as the loop's store does.
The library sums in its own order, as any parallel reduction does.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Optional

import numpy as np
from numba.core import ir as nir
from numba.core import types
from numba.parfors.parfor import Parfor

from .._mlir import arith, ir, memref, scf
from ..lowering import blas
from ..lowering.arrays import allocate, copy_array, load_element, store_element
from ..lowering.casts import cast
from ..lowering.loops import parallel_for
from ..lowering.values import ArrayValue
from ..lowering.build import cmpi, const, const_index, dim, element_address, to_index
from ..lowering.exceptions import STATUS, status_type
from ..lowering.overlap import disjoint
from .last_values import read_outside


@dataclass
class MatrixProduct:
    a: str
    b: str
    c: str
    rows: tuple          # ("var", name), ("int", n), ("dim", array, axis), or for the
                         # flat form ("flat", the loop's stop) with rows of `cols`
    cols: tuple          # the j loop's size: ("var", name) or ("dim", array, axis)
    depth: tuple         # the inner loop's size, the same way
    dtype: types.Type    # the accumulator's: the arrays', or float64 over float32 arrays


def matrix_product(lw, parfor: Parfor) -> Optional[MatrixProduct]:
    """The product `parfor` computes, if its body is exactly one. `parfor`
    is as Numba made it or with its perfect nest collapsed (collapse.py),
    which makes nested pranges over i and j one loop nest of two."""
    if len(parfor.loop_nests) not in (1, 2) or parfor.redvars:
        return None
    if any(nest.start != 0 or nest.step != 1 for nest in parfor.loop_nests):
        return None
    blocks = {label: [s for s in block.body if not isinstance(s, nir.Del)]
              for label, block in parfor.loop_body.items()}
    init = [s for s in parfor.init_block.body if not isinstance(s, nir.Del)]
    try:
        bounds = _bounds(init, parfor.loop_nests)
        match = _Match(blocks, [nest.index_variable.name for nest in parfor.loop_nests])
        found = match.run(min(blocks))
    except _NoMatch:
        return None
    cols, a, b, c, acc, depth = found
    array_types = [lw.typeof(name) for name in (a, b, c)]
    if not all(isinstance(t, types.Array) and t.ndim == 2 for t in array_types):
        return None
    dtype, acc_type = array_types[0].dtype, lw.typeof(acc)
    if any(t.dtype != dtype for t in array_types) or not blas.has_gemm(dtype) \
            or isinstance(dtype, types.Complex) \
            or acc_type not in (dtype, types.float64 if dtype == types.float32 else dtype):
        return None
    if match.assigned & read_outside(lw, parfor):
        return None
    if len(bounds) == 2:
        rows, cols = bounds
    elif match.flat is not None:
        rows, cols = ("flat", bounds[0]), ("var", match.flat)
    else:
        rows = bounds[0]
    return MatrixProduct(a, b, c, rows, cols, depth, acc_type)


def _bounds(init: list, nests) -> list:
    """The loop nests' stops: ("int", n), ("var", name) of a variable from
    outside the loop, or ("dim", X, axis) for `X.shape[axis]` computed in the
    init block (where collapse.py moves an inner loop's bound), which must
    hold nothing else."""
    defs = {s.target.name: s for s in init if isinstance(s, nir.Assign)}
    bounds, used = [], 0
    for nest in nests:
        if not isinstance(nest.stop, nir.Var):
            bounds.append(("int", nest.stop))
        elif nest.stop.name not in defs:
            bounds.append(("var", nest.stop.name))
        else:
            size = _shape_item(defs, nest.stop.name)
            bounds.append(size[:3])
            used += len(size[3])
    if used != len(init):
        raise _NoMatch
    return bounds


class _NoMatch(Exception):
    pass


def _shape_item(defs: dict, name: str) -> tuple:
    """("dim", X, axis, its statements) if `name` is `X.shape[axis]` as
    `defs` (name -> assignment) compute it."""
    get = defs.get(name)
    if not (get is not None and _is(get, "static_getitem") and isinstance(get.value.index, int)):
        raise _NoMatch
    shape = defs.get(get.value.value.name)
    if not (shape is not None and _is(shape, "getattr") and shape.value.attr == "shape"):
        raise _NoMatch
    used = [get, shape] + ([defs[get.value.index_var.name]]
                           if get.value.index_var is not None
                           and get.value.index_var.name in defs else [])
    return ("dim", shape.value.value.name, get.value.index, used)


class _Match:
    """Walks the body's blocks along the one shape a product has: a loop
    nest over i with a `range` loop over j in it; a nest over (i, j); or one
    flat loop over i * m + j, split as `i = t // m; j = t % m`."""

    def __init__(self, blocks: dict, indices: list):
        self.blocks, self.indices = blocks, indices
        self.assigned: set = set()
        self.flat = None        # the flat form's column count variable

    def _check(self, condition) -> None:
        if not condition:
            raise _NoMatch

    def _assigns(self, stmts) -> None:
        self.assigned |= {s.target.name for s in stmts if isinstance(s, nir.Assign)}

    def _range_loop(self, label: int):
        """Block `label` ends `range(x)`'s loop set-up: (its other statements,
        the size, the loop variable, the body's label, the exit's label,
        the header's label). The size is a variable from outside the body or
        `X.shape[axis]` computed in the block: ("var", name) or ("dim", X, axis)."""
        stmts = self.blocks[label]
        self._check(len(stmts) >= 4 and isinstance(stmts[-1], nir.Jump))
        call, it = stmts[-3:-1]
        self._check(_is(call, "call") and len(call.value.args) == 1 and not call.value.kws
                    and _is(it, "getiter") and it.value.value.name == call.target.name)
        defs = {s.target.name: s for s in stmts[:-3] if isinstance(s, nir.Assign)}
        g = defs.get(call.value.func.name)
        self._check(g is not None and _is(g, "global") and g.value.value is range)
        setup, size = [g], self._size(defs, call.value.args[0].name)
        if size[0] == "dim":
            setup += size[3]
            size = size[:3]
        header = self.blocks[stmts[-1].target]
        self._check(len(header) == 4 and _is(header[0], "iternext")
                    and header[0].value.value.name == it.target.name
                    and _is(header[1], "pair_first") and _is(header[2], "pair_second")
                    and isinstance(header[3], nir.Branch)
                    and header[3].cond.name == header[2].target.name)
        self._assigns(stmts + header)
        rest = [s for s in stmts[:-3] if all(s is not t for t in setup)]
        return (rest, size, header[1].target.name, header[3].truebr, header[3].falsebr,
                stmts[-1].target)

    def _size(self, defs: dict, name: str) -> tuple:
        """("var", name) for a variable the body does not assign, or
        ("dim", X, axis, its statements) for `X.shape[axis]` here."""
        if not any(isinstance(s, nir.Assign) and s.target.name == name
                   for block in self.blocks.values() for s in block):
            return ("var", name)
        return _shape_item(defs, name)

    def run(self, entry: int):
        """(the j loop's size, or None where the loop nest gives it; A, B, C,
        the accumulator, the k loop's size)."""
        if len(self.indices) == 2:
            i, j = self.indices
            return (None,) + self._product_loop(entry, i, j, exit_header=None, blocks=4)
        split = self._flat_split(entry)
        if split is not None:
            return (None,) + self._product_loop(entry, *split, exit_header=None, blocks=4)
        before, cols, j, middle, done, outer_header = self._range_loop(entry)
        self._check(not before and not self.blocks[done])
        # set-up, two headers, two bodies, store, exit
        return (cols,) + self._product_loop(middle, self.indices[0], j,
                                            exit_header=outer_header, blocks=7)

    def _flat_split(self, entry: int) -> Optional[tuple]:
        """(i, j) if block `entry` starts `[t = index;] i = t // m; j = t % m`
        (m from outside the body); those statements are taken off it."""
        stmts = self.blocks[entry]
        head = 3 if stmts and isinstance(stmts[0], nir.Assign) and \
            isinstance(stmts[0].value, nir.Var) else 2
        if len(stmts) < head or not all(isinstance(s, nir.Assign) for s in stmts[:head]):
            return None
        index = {self.indices[0]} | ({stmts[0].target.name} if head == 3 else set())
        if head == 3 and stmts[0].value.name != self.indices[0]:
            return None
        div, mod = (s.value for s in stmts[head - 2:head])
        split = all(isinstance(e, nir.Expr) and e.op == "binop" and e.fn == fn
                    and e.lhs.name in index for e, fn in ((div, operator.floordiv),
                                                        (mod, operator.mod)))
        if not split or div.rhs.name != mod.rhs.name or any(
                isinstance(s, nir.Assign) and s.target.name == div.rhs.name
                for block in self.blocks.values() for s in block):
            return None
        self.flat = div.rhs.name
        self._assigns(stmts[:head])
        self.blocks[entry] = stmts[head:]
        return stmts[head - 2].target.name, stmts[head - 1].target.name

    def _product_loop(self, label: int, i: str, j: str, exit_header, blocks: int):
        """From block `label`: `acc = 0`, `for k in range(p): acc += A[i, k] *
        B[k, j]`, `C[i, j] = acc`, then a jump to `exit_header` (the j loop's
        header) or the end of the body; the body has `blocks` blocks."""
        before, depth, k, inner, after, inner_header = self._range_loop(label)
        acc = self._zeroed_accumulator(before)
        a, b = self._contraction(self.blocks[inner], acc, k, i, j, inner_header)
        store = self.blocks[after]
        ends = 3 if exit_header is not None else 2
        self._check(len(store) == ends and _is(store[0], "build_tuple")
                    and [v.name for v in store[0].value.items] == [i, j]
                    and isinstance(store[1], nir.SetItem)
                    and store[1].index.name == store[0].target.name
                    and store[1].value.name == acc)
        if exit_header is not None:
            self._check(isinstance(store[2], nir.Jump) and store[2].target == exit_header)
        self._assigns(store)
        self._check(len(self.blocks) == blocks)
        return a, b, store[1].target.name, acc, depth

    def _zeroed_accumulator(self, stmts: list) -> str:
        """`acc = 0.0` or `acc = np.float32(0)` (np.float64, or the type
        imported by name), then the copies Numba's SSA makes (`acc.2 = acc`),
        and nothing else: the last copy's name."""
        self._check(stmts and all(isinstance(s, nir.Assign) for s in stmts))
        defs = {s.target.name: s.value for s in stmts}
        acc = name = stmts[-1].target.name
        used = 1
        while isinstance(defs.get(name), nir.Var):
            name, used = defs[name].name, used + 1
        init = defs.get(name)
        if isinstance(init, nir.Expr) and init.op == "call" and len(init.args) == 1 \
                and not init.kws:
            used += self._numpy_float(defs, init.func.name) + 1
            init = defs.get(init.args[0].name)
        self._check(isinstance(init, nir.Const) and init.value == 0 and used == len(stmts))
        return acc

    def _numpy_float(self, defs: dict, name: str) -> int:
        """How many statements name np.float32 or np.float64 as `name` (a
        global, or an attribute of the global np)."""
        value = defs.get(name)
        if isinstance(value, nir.Global):
            self._check(value.value in (np.float32, np.float64))
            return 1
        self._check(isinstance(value, nir.Expr) and value.op == "getattr"
                    and value.attr in ("float32", "float64")
                    and isinstance(defs.get(value.value.name), nir.Global)
                    and defs[value.value.name].value is np)
        return 2

    def _contraction(self, stmts: list, acc: str, k: str, i: str, j: str, header: int):
        """`acc += A[i, k] * B[k, j]`: (A, B)."""
        self._check(len(stmts) == 8 and isinstance(stmts[-1], nir.Jump)
                    and stmts[-1].target == header)
        self._assigns(stmts)
        defs = {s.target.name: s.value for s in stmts[:-1]}
        self._check(len(defs) == 7 and isinstance(defs.get(acc), nir.Var))
        total = defs[defs[acc].name]
        self._check(isinstance(total, nir.Expr) and (
            (total.op == "inplace_binop" and total.fn == operator.iadd
             and total.lhs.name == acc)
            or (total.op == "binop" and total.fn == operator.add
                and acc in (total.lhs.name, total.rhs.name))))
        other = total.rhs if total.lhs.name == acc else total.lhs
        product = defs.get(other.name)
        self._check(isinstance(product, nir.Expr) and product.op == "binop"
                    and product.fn == operator.mul)
        factors = [self._element(defs, v.name) for v in (product.lhs, product.rhs)]
        by_index = {index: array for array, index in factors}
        self._check(set(by_index) == {(i, k), (k, j)})
        return by_index[(i, k)], by_index[(k, j)]

    def _element(self, defs: dict, name: str):
        get = defs.get(name)
        self._check(isinstance(get, nir.Expr) and get.op == "getitem")
        index = defs.get(get.index.name)
        self._check(isinstance(index, nir.Expr) and index.op == "build_tuple"
                    and len(index.items) == 2)
        return get.value.name, tuple(v.name for v in index.items)


def _is(stmt, op: str) -> bool:
    if not isinstance(stmt, nir.Assign):
        return False
    if op in ("global", "const"):
        return isinstance(stmt.value, nir.Global if op == "global" else nir.Const)
    return isinstance(stmt.value, nir.Expr) and stmt.value.op == op


def lower_matrix_product(lw, product: MatrixProduct, as_written) -> None:
    """The product through BLAS where it holds when the code runs, else
    `as_written()` (the loop's general lowering) in the other branch."""
    a, b, c = (lw.read(nir.Var(None, name, lw.loc)) for name in (product.a, product.b, product.c))
    arrays = dict(zip((product.a, product.b, product.c), (a, b, c)))

    def size(how: tuple) -> ir.Value:
        if how[0] == "int":
            return const_index(how[1])
        if how[0] == "dim":
            array = arrays.get(how[1]) or lw.read(nir.Var(None, how[1], lw.loc))
            return dim(array.memref, how[2])
        return to_index(lw.read_as(nir.Var(None, how[1], lw.loc), types.intp))
    m, p = size(product.cols), size(product.depth)
    zero, one = const_index(0), const_index(1)
    if product.rows[0] == "flat":
        # i * m + j over [0, stop): rows of m, when stop is a whole number of them
        stop = size(product.rows[1])
        safe_m = arith.MaxSIOp(m, one).result
        n = arith.DivSIOp(stop, safe_m).result
        whole = cmpi("eq", arith.RemSIOp(stop, safe_m).result, zero)
    else:
        n, whole = size(product.rows), cmpi("eq", zero, zero)
    (a_rows, a_cols), (b_rows, b_cols), (c_rows, c_cols) = (
        [dim(x.memref, axis) for axis in (0, 1)] for x in (a, b, c))
    c_meta = memref.ExtractStridedMetadataOp(c.memref).results
    holds = [whole, cmpi("sgt", n, zero), cmpi("sgt", m, zero), cmpi("sgt", p, zero),
             cmpi("sle", n, a_rows), cmpi("sle", p, a_cols),
             cmpi("sle", p, b_rows), cmpi("sle", m, b_cols),
             cmpi("sle", n, c_rows), cmpi("sle", m, c_cols),
             cmpi("eq", c_meta[5], one), cmpi("sge", c_meta[4], m),
             disjoint(c, a), disjoint(c, b)]
    condition = holds[0]
    for h in holds[1:]:
        condition = arith.AndIOp(condition, h).result
    branch = scf.IfOp(condition, [status_type()], has_else=True)
    # checks made inside a branch (boundscheck, allocations) leave it as its status
    outer, pending = lw.ip, lw.errors.pending
    try:
        lw.ip, lw.errors.pending = ir.InsertionPoint(branch.then_block), []
        with lw.ip:
            if product.dtype == c.type.dtype:
                address = element_address(c.memref, c_meta[1], c.type.dtype.bitwidth // 8)
                failed = blas.gemm_into(lw, a, b, address, c_meta[4], n, m, p, product.dtype)
            else:
                failed = _widened_product(lw, a, b, c, n, m, p, product.dtype)
            scf.YieldOp([arith.SelectOp(failed, blas.failure_status(lw),
                                        lw.errors.pending_status()).result])
        lw.ip, lw.errors.pending = ir.InsertionPoint(branch.else_block), []
        as_written()
        with lw.ip:
            scf.YieldOp([lw.errors.pending_status()])
    finally:
        lw.ip, lw.errors.pending = outer, pending
    status = branch.results[0]
    lw.errors.raise_if(lw, cmpi("ne", status, const(STATUS, 0)), status)


def _widened_product(lw, a: ArrayValue, b: ArrayValue, c: ArrayValue, n, m, p,
                     dtype: types.Type) -> ir.Value:
    """C[:n, :m] = A @ B with float32 arrays and a float64 accumulator: the
    operands widened (exactly), a float64 gemm, each result rounded once
    into C, as the loop's store rounds its float64 sum. i1: BLAS failed."""
    wide = [copy_array(lw, x, types.Array(dtype, 2, "C")) for x in (a, b)]
    product = allocate(lw, types.Array(dtype, 2, "C"), [n, m])
    failed = blas.gemm_into(lw, *wide, element_address(product.memref),
                            arith.MaxUIOp(m, const_index(1)).result, n, m, p, dtype)

    def store(indices):
        store_element(cast(load_element(product, indices), dtype, c.type.dtype), c, indices)
    parallel_for(lw, [n, m], store)
    return failed

