#!/usr/bin/env bash
# On a 1-GPU machine (see benchmarks/README.md, "On a GPU"): the GPU test file, then the benchmark's gpu part (every accelerator
# key's img/s against the plain step). Writes gpu-tests.log, accelerator.json and accelerator.log under $OUT.
# The two together take over the device tool's 10 minutes a call (tests ~290 s, benchmark ~230 s on an H100):
# PART=tests or PART=bench runs one of them.
# Usage: source .gpu/prep.sh && [PART=tests|bench] bash benchmarks/gpu_keys.sh
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
part=${PART:-all}
if [ "$part" != bench ]; then
  timeout "${TESTS_LIMIT:-420}" python3 -m pytest -q -s -m gpu tests/test_gpu.py -p no:cacheprovider > "$out/gpu-tests.log" 2>&1
  echo "exit $?" >> "$out/gpu-tests.log"
fi
if [ "$part" != tests ]; then
  timeout "${BENCH_LIMIT:-300}" python3 -m benchmarks --only gpu --root "$MNIST_MINI" --out "$out/accelerator.json" > "$out/accelerator.log" 2>&1
  echo "exit $?" >> "$out/accelerator.log"
fi
