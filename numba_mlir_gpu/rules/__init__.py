"""Lowering rules, one module per family of operations.

Each module registers small rule functions into the registries of the
lowering core (lowering/registry.py) when it is imported; importing this
package imports them all. A rule module depends on the core and on the
parallel-loop machinery (`numba_mlir_gpu.parallel`), never on another rule
module: a rule that needs another operation looks it up in the registries.

    scalars       operators on scalars (Python's semantics)
    mathlib       the math module and numeric builtins (min, max, abs, ...)
    npufuncs      NumPy ufuncs on scalars without a math counterpart
    builtins      range/prange, enumerate, bool, int(), float(), np.float32(), ...
    threads       numba.get/set_num_threads, get/set_parallel_chunksize, parallel_chunksize
    arrays        array attributes, len, copies, np.empty/zeros/ones/full(_like)
    views         slices, .T, .flat, transpose, reshape, ravel
    fancy         index arrays and masks
    elementwise   ufuncs and operators on arrays, with broadcasting
    array_builders  np.where, np.clip, .astype, layout changes
    joins         np.concatenate, np.stack, np.vstack, np.hstack of tuples of arrays
    reductions    argmin/argmax, min/max, sum(axis=), any/all
    nanfunctions  np.nansum/nanprod/nanmin/nanmax/nanmean/nanvar/nanstd
    closeness     np.isclose/np.allclose of arrays
    sorting       np.sort, .sort(), np.argsort: a parallel merge sort
    scans         nonzero, cumsum, cumprod
    linalg        np.dot and @
    tuples        comparisons, concatenation and `in` on tuples
    complexes     complex numbers; registered over the rules above for complex
                  signatures, so imported after them
    datetimes     datetime64/timedelta64 (Numba's units, NaT); registered over
                  the rules above for their signatures, so imported last
    random        np.random: seed, uniform/normal/exponential/randint/poisson draws
    printing      print() of numbers and constant strings in host code
"""
from . import (array_builders, arrays, builtins, closeness, elementwise, fancy,  # noqa: F401
               joins, linalg, mathlib, nanfunctions, npufuncs, printing, random, reductions,
               scalars, scans, sorting, threads, tuples, views)
from . import complexes  # noqa: F401,E402  (after the rules it extends)
from . import datetimes  # noqa: F401,E402  (after the rules it extends)
