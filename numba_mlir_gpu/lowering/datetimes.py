"""datetime64 and timedelta64: building blocks shared by the rules
(rules/datetimes.py) and the casts (casts.py).

A value of either type is one i64 (Numba's and NumPy's layout): a count of
its unit since the epoch (datetime64) or a count of its unit (timedelta64),
NaT being INT64_MIN. The unit lives in the Numba type only. Unit changes are
Numba's (numba/np/npdatetime.py): a multiplication by the exact factor
between linear units (`npdatetime_helpers.get_timedelta_conversion_factor`);
a datetime64 in years or months is first turned into days (or weeks) with
the calendar, as Numba's `convert_datetime_for_arith`. Conversions Numba
cannot make (timedelta64 in years or months to days, finer to coarser) are
refused.
"""
from __future__ import annotations

from numba.core import types
from numba.np import npdatetime_helpers as helpers

from .._mlir import arith, ir
from .build import cmpi, const, select
from .errors import UnsupportedConstructError

I64 = types.int64
NAT = int(helpers.NAT)          # INT64_MIN

# days before each month of a normal year (a leap year adds one from March)
_MONTH_DAYS_BEFORE = (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)


def nat() -> ir.Value:
    return const(I64, NAT)


def is_nat(value: ir.Value) -> ir.Value:
    return cmpi("eq", value, nat())


def not_nat(*values: ir.Value) -> ir.Value:
    """Whether none of `values` is NaT."""
    result = None
    for value in values:
        ok = cmpi("ne", value, nat())
        result = ok if result is None else arith.AndIOp(result, ok).result
    return result


def or_nat(ok: ir.Value, value: ir.Value) -> ir.Value:
    """`value` where `ok`, else NaT."""
    return select(ok, value, nat())


def scale(value: ir.Value, factor: int) -> ir.Value:
    return value if factor == 1 else arith.MulIOp(value, const(I64, factor)).result


def factor(src_unit: str, dest_unit: str, loc=None, what: str = "timedelta64") -> int:
    """The integer factor from `src_unit` to `dest_unit`, refused if there is none."""
    found = helpers.get_timedelta_conversion_factor(src_unit, dest_unit)
    if found is None:
        raise UnsupportedConstructError(
            f"converting {what} from [{src_unit}] to [{dest_unit}] (not an integer "
            f"multiple; Numba refuses it too)", loc)
    return found


def scale_timedelta(value: ir.Value, src: types.NPTimedelta, dest: types.NPTimedelta,
                    loc=None) -> ir.Value:
    """Numba's scale_timedelta (NaT is not kept: callers select it)."""
    return scale(value, factor(src.unit, dest.unit, loc))


def normalize(a: ir.Value, b: ir.Value, a_ty, b_ty):
    """Numba's normalize_timedeltas: the coarser operand scaled to the finer
    unit; None when neither unit converts to the other."""
    up = helpers.get_timedelta_conversion_factor(a_ty.unit, b_ty.unit)
    if up is not None:
        return scale(a, up), b
    down = helpers.get_timedelta_conversion_factor(b_ty.unit, a_ty.unit)
    if down is not None:
        return a, scale(b, down)
    return None


def floor_divmod(value: ir.Value, divisor: int):
    """(value // divisor, value % divisor) with Python's signs, as Numba's
    cgutils.divmod_by_constant."""
    d = const(I64, divisor)
    q = arith.FloorDivSIOp(value, d).result
    return q, arith.SubIOp(value, arith.MulIOp(q, d).result).result


def _add(value: ir.Value, n: int) -> ir.Value:
    return arith.AddIOp(value, const(I64, n)).result


def _sdiv(value: ir.Value, n: int) -> ir.Value:
    return arith.DivSIOp(value, const(I64, n)).result


def is_leap_year(year: ir.Value) -> ir.Value:
    """Whether `year` (counted from 1970) is a leap year."""
    actual = _add(year, 1970)
    zero = const(I64, 0)
    by_4 = cmpi("eq", arith.AndIOp(actual, const(I64, 3)).result, zero)
    not_by_100 = cmpi("ne", arith.RemSIOp(actual, const(I64, 100)).result, zero)
    by_400 = cmpi("eq", arith.RemSIOp(actual, const(I64, 400)).result, zero)
    return arith.AndIOp(by_4, arith.OrIOp(not_by_100, by_400).result).result


def year_to_days(year: ir.Value) -> ir.Value:
    """Days from 1970-01-01 to January 1st of `year` (counted from 1970):
    Numba's year_to_days (NumPy's get_datetimestruct_days)."""
    days = scale(year, 365)
    from_1968 = _add(year, 1)
    from_1900 = _add(from_1968, 68)
    from_1600 = _add(from_1900, 300)
    after = arith.AddIOp(days, _sdiv(from_1968, 4)).result
    after = arith.SubIOp(after, _sdiv(from_1900, 100)).result
    after = arith.AddIOp(after, _sdiv(from_1600, 400)).result
    from_1972 = _add(year, -2)
    from_2000 = _add(from_1972, -28)
    before = arith.AddIOp(days, _sdiv(from_1972, 4)).result
    before = arith.SubIOp(before, _sdiv(from_2000, 100)).result
    before = arith.AddIOp(before, _sdiv(from_2000, 400)).result
    return select(cmpi("slt", year, const(I64, 0)), before, after)


def _days_before_month(month: ir.Value, leap: ir.Value) -> ir.Value:
    days = const(I64, 0)
    for m, before in enumerate(_MONTH_DAYS_BEFORE):
        if m:
            days = select(cmpi("eq", month, const(I64, m)), const(I64, before), days)
    march_on = arith.AndIOp(leap, cmpi("sge", month, const(I64, 2))).result
    return arith.AddIOp(days, arith.ExtUIOp(ir.IntegerType.get_signless(64),
                                            march_on).result).result


def convert_datetime(value: ir.Value, src_unit: str, dest_unit: str, loc=None) -> ir.Value:
    """Numba's convert_datetime_for_arith: a datetime64 in `src_unit` as a
    count of `dest_unit` (NaT is not kept: callers select it)."""
    src_code = helpers.DATETIME_UNITS[src_unit]
    dest_code = helpers.DATETIME_UNITS[dest_unit]
    unit = src_unit
    if dest_code >= 2 and src_code < 2:
        if src_code == 0:                   # years
            days = year_to_days(value)
        else:                               # months
            year, month = floor_divmod(value, 12)
            days = arith.AddIOp(year_to_days(year),
                                _days_before_month(month, is_leap_year(year))).result
        if dest_code == 2:
            value, unit = floor_divmod(days, 7)[0], "W"
        else:
            value, unit = days, "D"
    return scale(value, factor(unit, dest_unit, loc, "datetime64"))


def cast(value: ir.Value, fromty, toty, loc=None) -> ir.Value:
    """A datetime64/timedelta64 value in another unit (NaT stays NaT), or
    as an integer (its count, as Numba's cast to a 64-bit integer)."""
    if isinstance(toty, types.Integer):
        if toty.bitwidth != 64:
            raise UnsupportedConstructError(
                f"converting {fromty} to {toty} (Numba converts to 64-bit integers only)", loc)
        return value
    if isinstance(fromty, types.Integer):
        if type(toty) is types.NPTimedelta or type(toty) is types.NPDatetime:
            if fromty.bitwidth < 64:
                op = arith.ExtSIOp if fromty.signed else arith.ExtUIOp
                value = op(ir.IntegerType.get_signless(64), value).result
            return value
    if type(fromty) is not type(toty):
        raise UnsupportedConstructError(f"converting {fromty} to {toty}", loc)
    if fromty.unit == toty.unit:
        return value
    if isinstance(toty, types.NPDatetime):
        converted = convert_datetime(value, fromty.unit, toty.unit, loc)
    else:
        converted = scale_timedelta(value, fromty, toty, loc)
    return or_nat(not_nat(value), converted)


# Reductions (parallel/reduction.py): `combine_op` is operator.add, the
# builtins min/max (Numba's max_vararg: a NaT never replaces a value and a
# NaT already held stays), or "nat_max"/"nat_min" (np.max/np.min of an
# array: a NaT wins, as Numba's npy_max returns the first NaT it meets).
def extreme_identity(largest: bool) -> int:
    """Where a NaT-winning max (min) fold starts: the smallest (largest)
    count that is not NaT."""
    return NAT + 1 if largest else 2 ** 63 - 1


def combine(kind: str, a: ir.Value, b: ir.Value) -> ir.Value:
    if kind == "add":
        return or_nat(not_nat(a, b), arith.AddIOp(a, b).result)
    largest = kind in ("max", "nat_max")
    beats = cmpi("sgt" if largest else "slt", b, a)
    if kind in ("nat_max", "nat_min"):
        take = arith.OrIOp(is_nat(b), arith.AndIOp(not_nat(a), beats).result).result
    elif kind in ("max", "min"):
        take = arith.AndIOp(not_nat(a, b), beats).result
    else:
        raise UnsupportedConstructError(f"a {kind} reduction of datetime64/timedelta64 values")
    return select(take, b, a)
