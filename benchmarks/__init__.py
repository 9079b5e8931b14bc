"""Timings and resource figures of the product, one module each, run from a clone as ``python
-m benchmarks.NAME`` (not in the wheel); the GPU suite (``benchmarks/gpu_suite.sh``) calls them
that way."""
