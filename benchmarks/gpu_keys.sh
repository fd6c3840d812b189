#!/usr/bin/env bash
# On a 1-GPU machine (see benchmarks/README.md, "On a GPU"): the GPU test file, then the benchmark's gpu part (every accelerator
# key's img/s against the plain step). Writes gpu-tests.log, accelerator.json and accelerator.log under $OUT.
# Usage: source .gpu/prep.sh && bash benchmarks/gpu_keys.sh
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
timeout "${TESTS_LIMIT:-260}" python3 -m pytest -q -s -m gpu tests/test_gpu.py -p no:cacheprovider > "$out/gpu-tests.log" 2>&1
echo "exit $?" >> "$out/gpu-tests.log"
timeout "${BENCH_LIMIT:-300}" python3 -m benchmarks --only gpu --root "$MNIST_MINI" --out "$out/accelerator.json" > "$out/accelerator.log" 2>&1
echo "exit $?" >> "$out/accelerator.log"
