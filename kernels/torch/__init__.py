"""Torch kernel programs: each module is run as `python -m kernels.torch.<kernel>`."""
