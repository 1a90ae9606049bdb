"""NumPy-like universal functions compiled through our MLIR pipeline:
`vectorize` (element-wise kernels) and `guvectorize` (kernels over core
dimensions). See docs/user-guide.md, "Universal functions".

    vectorize.py   UFunc (a Numba DUFunc typed and run by us), vectorize
    gufunc.py      GUFunc, guvectorize
    in_compiled_code.py  a GUFunc called inside our compiled functions
    reduce.py      UFunc.reduce
    loopgen.py     the generated loop nests each call runs (our njit)
    signatures.py  compiled signatures and the choice among them
    layouts.py     gufunc layout strings "(m,n),(n)->(m)"
    operands.py    call arguments as the loops take them
    templates.py   typing of UFunc calls inside compiled code, lowered by our lowering
    options.py     Numba's options; `target` as in our njit
"""
from .gufunc import GUFunc, guvectorize
from .vectorize import UFunc, vectorize

__all__ = ["GUFunc", "UFunc", "guvectorize", "vectorize"]
