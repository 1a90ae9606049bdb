"""From typed Numba IR to a callable address: lowering (driver.py runs the
lowering core with the rules and the target's strategy), the MLIR pass
pipelines of both targets (passes.py, with deallocation.py and the launch
tiling of launch.py), and the JIT (jit.py: OrcJIT through MLIR's
ExecutionEngine)."""
from .driver import CompiledFunction, compile_state

__all__ = ["CompiledFunction", "compile_state"]
