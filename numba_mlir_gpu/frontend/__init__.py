"""The Numba side: the pipeline class and the pass that replaces Numba's
lowering (pipeline.py), Numba's front end with our rewrites among its passes
(typed_ir.py, rewrites.py), the Numba-convention entry that calls the JIT-ed
code (wrapper.py), the on-disk cache key (caching.py) and the dispatcher's
shortcut for device arrays (dispatch.py)."""
