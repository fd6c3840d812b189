#!/usr/bin/env bash
# On a 1-GPU machine (see benchmarks/README.md, "On a GPU"), in one device call, each step under `timeout` within
# TOTAL_S seconds: the GPU and commit; fused trials against packed processes (benchmarks/fused.py: cnn_mnist and
# mlp_mnist, N = 1, 4, 8, 16); a 2-worker DDP trial on the one GPU (`run workers=2`, then `workers=2 gpus=0.5`: each
# run or its refusal, with its wall and exit code) and two ranks joining on the one GPU with NCCL and with gloo
# (benchmarks/two_ranks_one_gpu.py); tests/test_gpu.py; then, with the time left, the fused benchmark on
# resnet_mnist. Writes gpu.txt, fused.json, fused.log, ddp.log, two-ranks.jsonl, gpu-tests.log, fused-resnet.json,
# fused-resnet.log and steps.txt (each step's exit code and seconds) under $OUT.
# Usage: source .gpu/prep.sh && [COMMIT=<sha>] TOTAL_S=420 bash benchmarks/gpu_fused.sh
# A smoke run on a CPU: MNIST_MINI=<an MNIST root> MEMBERS=1,2 WINDOW_S=0.5 DDP_LIMIT=256 bash benchmarks/gpu_fused.sh
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
start=$(date +%s)
total=${TOTAL_S:-420}
root=${MNIST_MINI:?source .gpu/prep.sh first}
members=${MEMBERS:-1,4,8,16} window=${WINDOW_S:-3}  # smaller for a smoke run on a CPU
left() { echo $(( total - ($(date +%s) - start) )); }
limit() { local want=$1 have; have=$(( $(left) - 5 )); echo $(( want < have ? want : have )); }  # seconds a step may take
step() {  # step NAME LOG LIMIT COMMAND...: runs COMMAND under timeout, its output in LOG, its exit code in steps.txt
  local name=$1 log=$2 cap=$3 began; shift 3
  if [ "$cap" -lt 10 ]; then echo "$name: skipped, $(left) s left" >> "$out/steps.txt"; return; fi
  began=$(date +%s)
  timeout --kill-after=10 "$cap" "$@" >> "$out/$log" 2>&1
  local rc=$?
  echo "$name: exit $rc after $(( $(date +%s) - began )) s (limit $cap s)" | tee -a "$out/$log" >> "$out/steps.txt"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu.txt" 2>&1
echo "commit ${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}" >> "$out/gpu.txt"
nproc >> "$out/gpu.txt"

step fused fused.log "$(limit "${FUSED_LIMIT:-150}")" python3 -m benchmarks.fused "$root" \
  --spaces cnn_mnist,mlp_mnist --members "$members" --window-s "$window" --out "$out/fused.json"

ddp_keys=(space=resnet_mnist "data.root=$root" "data.limit=${DDP_LIMIT:-4096}" data.val_limit=500 trials=1 epochs=1 storage=/tmp/ddp-runs)
echo "== run workers=2 ($(date -u +%T))" >> "$out/ddp.log"
step "ddp workers=2" ddp.log "$(limit 120)" python3 -m search run "${ddp_keys[@]}" workers=2 name=ddp2
echo "== run workers=2 gpus=0.5 ($(date -u +%T))" >> "$out/ddp.log"
step "ddp workers=2 gpus=0.5" ddp.log "$(limit 120)" python3 -m search run "${ddp_keys[@]}" workers=2 gpus=0.5 name=ddp2h
for backend in nccl gloo; do
  step "two ranks $backend" two-ranks.jsonl "$(limit 100)" python3 -m benchmarks.two_ranks_one_gpu "$backend"
done
cp /tmp/ddp-runs/ddp2*/search.log "$out/" 2>/dev/null

step gpu-tests gpu-tests.log "$(limit "${TESTS_LIMIT:-300}")" python3 -m pytest -v -s -m gpu tests/test_gpu.py \
  -p no:cacheprovider --durations=0

step fused-resnet fused-resnet.log "$(limit 200)" python3 -m benchmarks.fused "$root" --spaces resnet_mnist \
  --members "$members" --window-s "$window" --out "$out/fused-resnet.json"
echo "total $(( $(date +%s) - start )) s of $total" >> "$out/steps.txt"
cat "$out/steps.txt" "$out/two-ranks.jsonl"  # on the terminal too: the device tool brings back a limited count of files
