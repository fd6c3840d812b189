#!/usr/bin/env bash
# On a 1-GPU machine (see benchmarks/README.md, "On a GPU"), in one device call: the peer (a plain Optuna loop
# against the search, with the search's start and each trial's start by phase, and the GPU's busy share while trials
# train), then as much of the resnet_mnist learning-curve table as the time left allows (the builder resumes from
# the parts in results/tables/parts; gzip $OUT's .partial as the next part). Writes gpu.txt, peer.json, peer.log, table.log, tables/ under $OUT.
# Usage: source .gpu/prep.sh && TOTAL_S=540 bash benchmarks/gpu_phases.sh
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/tables"
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu.txt" 2>&1
git rev-parse HEAD >> "$out/gpu.txt" 2>/dev/null

timeout "${PEER_LIMIT:-220}" python3 -m benchmarks --only peer --root "${MNIST60K:?source .gpu/prep.sh first}" \
  --out "$out/peer.json" > "$out/peer.log" 2>&1
echo "exit $? after $(( $(date +%s) - start )) s" >> "$out/peer.log"

sample=$(python3 -c "from search.samples import mnist_root; print(mnist_root())")
for part in benchmarks/results/tables/parts/resnet_mnist-8ep-4seeds-part*.jsonl.gz; do  # the rows built before
  [ -f "$part" ] && zcat "$part" >> "$out/tables/resnet_mnist-8ep-4seeds.jsonl.gz.partial"
done
left=$(( ${TOTAL_S:-540} - ($(date +%s) - start) ))
timeout --signal=INT "$left" python3 -m benchmarks.curve_table "$sample" --space resnet_mnist --epochs 8 \
  --seeds 0,1,2,3 --jobs "${JOBS:-14}" --device cuda --out "$out/tables/resnet_mnist-8ep-4seeds.jsonl.gz" \
  > "$out/table.log" 2>&1
echo "exit $? after $(( $(date +%s) - start )) s; $(wc -l < "$out/tables/resnet_mnist-8ep-4seeds.jsonl.gz.partial") rows" \
  >> "$out/table.log"
