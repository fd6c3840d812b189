#!/usr/bin/env bash
# On a 1-GPU machine (see benchmarks/README.md, "On a GPU"), in one device call: the peer (a plain Optuna loop against
# the search, the search's start and its trials' start in trial-seconds, the GPU's busy share), the default command on
# 60,000 digits with nvidia-smi sampling every second and each trial's start figures (how many of its modules it
# found imported, driver to first step), tests/test_gpu.py before it. Writes under $OUT (or ./gpu-out): gpu.txt,
# peer.json, peer.log, peer-no-preload.{json,log}, test_gpu.log, default.log, smi-default.csv, default-trials.json.
# Usage: source .gpu/prep.sh && bash benchmarks/gpu_warm.sh
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
root=${MNIST60K:?source .gpu/prep.sh first}
runs=/tmp/gpu-runs; rm -rf "$runs"; mkdir -p "$runs"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu.txt" 2>&1
git rev-parse HEAD >> "$out/gpu.txt" 2>/dev/null; nproc >> "$out/gpu.txt"

# The peer twice: with the trial modules preloaded in Ray's workers (the default here), and without (an empty list)
timeout "${PEER_LIMIT:-130}" python3 -m benchmarks --only peer --root "$root" --out "$out/peer.json" > "$out/peer.log" 2>&1
echo "exit $?" >> "$out/peer.log"
RAY_preload_python_modules= timeout "${PEER_LIMIT:-130}" python3 -m benchmarks --only peer --root "$root" \
  --out "$out/peer-no-preload.json" > "$out/peer-no-preload.log" 2>&1
echo "exit $?" >> "$out/peer-no-preload.log"
timeout "${TEST_LIMIT:-130}" python3 -m pytest -q -x -m gpu tests/test_gpu.py -p no:cacheprovider > "$out/test_gpu.log" 2>&1
echo "exit $?" >> "$out/test_gpu.log"

nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -l 1 > "$out/smi-default.csv" &
smi=$!
start=$(date +%s.%N)
timeout "${DEFAULT_LIMIT:-150}" python3 -m search run space=resnet_mnist data.root="$root" storage="$runs" name=default \
  > "$out/default.log" 2>&1
echo "exit $? wall_s $(python3 -c "print(round($(date +%s.%N) - $start, 1))")" >> "$out/default.log"
kill $smi
python3 - "$runs/default" > "$out/default-trials.json" <<'PY'
import json, sys, pathlib
exp = pathlib.Path(sys.argv[1]); out = {"trials": []}
keys = ("warm_imports", "trial_of_process", "process_s", "launch_s", "setup_data_s", "setup_model_s", "setup_ddp_s")
for folder in sorted(exp.glob("trial_*")):
    rows = [json.loads(l) for l in (folder / "result.json").read_text().splitlines() if l.strip()]
    if not rows:
        continue
    out["trials"].append({"trial": folder.name, "epochs": len(rows),
                          "images_per_s": [round(r.get("images_per_s", 0)) for r in rows],
                          "started_at": rows[0]["started_at"], "ended_at": rows[-1]["started_at"] + rows[-1]["epoch_s"],
                          **{k: rows[0].get(k) for k in keys}})
summary = exp / "summary.json"
if summary.is_file():
    s = json.loads(summary.read_text()); out["best"] = s["best"]; out["run"] = s["run"]
print(json.dumps(out, indent=1, default=str))
PY
