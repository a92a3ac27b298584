#!/bin/bash
# The kernel, shapes and plan tests on the lent H200 machine: the 24
# CUDA tests that skip on a CPU-only machine run there.
#
# Run there from the repository root (python3 3.12 + torch 2.11, pandas,
# pyarrow, pytest and pytest-xdist are the machine's own; our other
# dependencies travel as wheels in .whl/: submitit, hydra-core, omegaconf,
# antlr4-python3-runtime, sqlalchemy, alembic, mako, duckdb, argcomplete;
# the Fortran binaries are built here, as that machine has no gfortran):
#   make kernels
#   device run, carry [.whl, kernels/build]:  bash scripts/h200_tests.sh
set -euo pipefail
OUT=${OUT:-${1:-/tmp/h200-out}}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
# the tests run the `campaign` console script beside sys.executable
python3 -m pip install -q --no-index --no-deps --no-build-isolation .
make -B -C kernels c CFLAGS="-O3 -fopenmp -march=native" >/dev/null
python3 -m pytest -q -p no:cacheprovider -n 8 -rs tests/kernels tests/shapes tests/plan 2>&1 | tee "$OUT/h200_tests.log"
