"""Compile-time checks of a kernel's typed IR (kernel API, part 3)."""
from __future__ import annotations


def check_kernel(state) -> None:
    return None
