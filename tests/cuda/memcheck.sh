#!/usr/bin/env bash
# compute-sanitizer's memcheck over the GPU cases that between them run every
# kernel of the CUDA runtime (Inception, ResNet, DenseNet, DARTS, dropout,
# both storages, a capture), and the engine binding with the example engine. Exit 77 (SKIP) without the tool or a device.
set -euo pipefail
if ! command -v compute-sanitizer >/dev/null; then
  echo "compute-sanitizer is not on PATH: skipped"
  exit 77
fi
# The test that checks a step allocates nothing reads cudaMemGetInfo, which
# the sanitizer's own device allocations move; this tells it so.
export REMAT_UNDER_SANITIZER=1
exec compute-sanitizer --tool memcheck --error-exitcode 1 "$1" \
  --test-case="dropout on the GPU*,pool storage*,a step allocates nothing*,engine binding on CUDA*"
