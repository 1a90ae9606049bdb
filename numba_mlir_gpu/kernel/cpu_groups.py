"""CPU work-groups of kernels with barriers or group collectives."""
from __future__ import annotations

from ..lowering.errors import UnsupportedConstructError


def run_groups(lw, name, flat, results, context, global_size, local_size, groups):
    raise UnsupportedConstructError("barriers or group collectives on the CPU target",
                                    context.barriers[0])


def cpu_collective(lw, context, name, value, dtype, rest, rest_types):
    return value


def cpu_shuffle(lw, context, mode, value, lane, lane_ty):
    raise UnsupportedConstructError("shuffles on the CPU target", lw.loc)
