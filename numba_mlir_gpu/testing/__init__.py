"""Running Numba's own test suites through MLIRGPUPipeline (numba_suite.py)."""
