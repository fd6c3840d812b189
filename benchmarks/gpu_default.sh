#!/usr/bin/env bash
# On a 1-GPU machine (see benchmarks/README.md, "On a GPU"): the default command with no shape keys, its export and a
# prediction, with the GPU's use sampled by nvidia-smi every second; then the loop peer. Writes under $OUT (or
# ./gpu-out): default.log, smi-default.csv, default-trials.json, predict.log, peer.log, peer.json.
# Usage: source .gpu/prep.sh && bash benchmarks/gpu_default.sh
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
root=${MNIST60K:?source .gpu/prep.sh first}
runs=/tmp/gpu-runs; rm -rf "$runs"; mkdir -p "$runs"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu.txt" 2>&1

# 1. The default command, GPU use sampled meanwhile
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -l 1 > "$out/smi-default.csv" &
smi=$!
start=$(date +%s.%N)
timeout "${DEFAULT_LIMIT:-330}" python3 -m search run space=resnet_mnist data.root="$root" storage="$runs" name=default \
  > "$out/default.log" 2>&1
echo "exit $? wall_s $(python3 -c "print(round($(date +%s.%N) - $start, 1))")" >> "$out/default.log"
kill $smi
python3 - "$runs/default" > "$out/default-trials.json" <<'PY'
import json, sys, pathlib
exp = pathlib.Path(sys.argv[1]); out = {"trials": []}
for folder in sorted(exp.glob("trial_*")):
    rows = [json.loads(l) for l in (folder / "result.json").read_text().splitlines() if l.strip()]
    out["trials"].append({"trial": folder.name, "epochs": len(rows),
                          "images_per_s": [round(r.get("images_per_s", 0)) for r in rows],
                          "started_at": rows[0]["started_at"] if rows else None,
                          "ended_at": rows[-1]["started_at"] + rows[-1]["epoch_s"] if rows else None})
summary = exp / "summary.json"
if summary.is_file():
    s = json.loads(summary.read_text()); out["best"] = s["best"]; out["run"] = s["run"]
print(json.dumps(out, indent=1, default=str))
PY
python3 - "$MNIST_MINI/MNIST/raw/t10k-images-idx3-ubyte" "$out" <<'PY'
import numpy as np, sys
from PIL import Image
x = np.fromfile(sys.argv[1], np.uint8, offset=16).reshape(-1, 28, 28)
for i in range(3):
    Image.fromarray(x[i]).save(f"/tmp/digit{i}.png")
PY
{ python3 -m search export "$runs/default" out=/tmp/export && python3 -m search predict /tmp/export /tmp/digit0.png /tmp/digit1.png /tmp/digit2.png; echo "exit $?"; } > "$out/predict.log" 2>&1

# 2. The loop peer: the same 8 fixed trials through a plain Optuna loop in one process and through the search
timeout "${PEER_LIMIT:-240}" python3 -m benchmarks --only peer --root "$root" --out "$out/peer.json" > "$out/peer.log" 2>&1
echo "exit $?" >> "$out/peer.log"
