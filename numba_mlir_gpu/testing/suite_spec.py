"""Which of Numba's shipped test modules the suite runs, and how each one's
compilations are split between ours and Numba's reference."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .intercept import Policy, all_ours, parallel_is_ours


@dataclass(frozen=True)
class ModuleSpec:
    name: str                                   # numba.tests.<name>
    policy: Policy
    include: Optional[tuple] = None             # test classes to run (None: all)
    exclude: tuple = ()                         # test classes left out, see `why`
    why: str = ""
    # test classes whose compilations follow another policy, and why
    class_policies: tuple = ()                  # ((class name, Policy), ...)
    class_why: str = ""

    def policy_of(self, test_id: str) -> Policy:
        """The policy of the test `numba.tests.<module>.<Class>.<test>`."""
        cls = test_id.split(".")[3]
        return dict(self.class_policies).get(cls, self.policy)


MODULES = (
    ModuleSpec(
        "test_parfors", parallel_is_ours,
        exclude=("TestParforsRunner",),
        why="TestParforsRunner only re-runs the other classes of the module in fresh "
            "interpreters, which this runner does itself (instrumented)",
        class_policies=(("TestParforChunksizing", all_ours),),
        class_why="TestParforChunksizing's njit tests compare with no reference: their plain "
                  "njit compilations (get/set_parallel_chunksize, the with block) are the "
                  "code under test"),
    ModuleSpec("test_parfors_passes", parallel_is_ours),
    ModuleSpec("test_array_exprs", all_ours),
    ModuleSpec("test_optional", all_ours),
    ModuleSpec(
        "test_ufuncs", all_ours,
        include=("TestUFuncs", "TestArrayOperators", "TestScalarUFuncs", "TestUfuncIssues",
                 "TestLoopTypesInt", "TestLoopTypesSubtractAndNegative",
                 "TestLoopTypesReciprocal", "TestLoopTypesPower", "TestLoopTypesIntLeftShift",
                 "TestLoopTypesIntRightShift", "TestLoopTypesFloorDivide", "TestLoopTypesFloat",
                 "TestLoopTypesComplex", "TestLoopTypesDatetime", "TestUFuncBadArgs"),
        why="the njit parts; TestUFuncCompilationThreadSafety (@vectorize), "
            "TestUfuncWriteInput (@guvectorize) and TestUfuncOnContext (Numba's target "
            "context internals) do not compile through njit"),
    ModuleSpec("test_npdatetime", all_ours),
    # NumPy coverage beyond parfors (published, no target yet)
    ModuleSpec("test_array_reductions", all_ours),
    ModuleSpec("test_mathlib", all_ours),
    ModuleSpec("test_np_functions", all_ours),
)

BY_NAME = {spec.name: spec for spec in MODULES}


def spec_of(test_id: str) -> ModuleSpec:
    return BY_NAME[test_id.split(".")[2]]


# The part of the suite that CI runs (tests/test_numba_suite.py): whole
# classes that cover prange loops, parfor basics, slices, the parfor passes
# and array expressions, and that take about 3 minutes on 2 cores.
CI_PART = ("test_parfors.TestPrangeBasic", "test_parfors.TestParforBasic",
           "test_parfors.TestParforsSlice", "test_parfors_passes", "test_array_exprs")
