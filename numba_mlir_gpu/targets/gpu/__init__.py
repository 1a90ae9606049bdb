"""The GPU target: kernels for parallel loops (tiled onto blocks and threads
by compiler/launch.py), tree reductions (reduce.py), chunk kernels whose
block's threads share each iteration (chunks.py) with their temporaries in
scratch buffers (scratch.py), and argument mirrors (strategy.py)."""
from .strategy import GPUStrategy

__all__ = ["GPUStrategy"]
