"""Target strategies: the few decisions of the lowering that depend on
where code runs (how parallel loops and their reductions are built, where
arrays live). `choice.py` picks the target; `cpu.py` and `gpu/` implement it.
The strategies build on the parallel-loop machinery (`numba_mlir_gpu.parallel`),
never the reverse: the lowering reaches them only through `lw.target`.
"""
from __future__ import annotations

from .choice import TargetChoice
from .cpu import CPUStrategy
from .gpu import GPUStrategy


def strategy_for(choice: TargetChoice) -> CPUStrategy:
    return GPUStrategy() if choice.builds_gpu_code else CPUStrategy()


__all__ = ["CPUStrategy", "GPUStrategy", "TargetChoice", "strategy_for"]
