#!/bin/bash
# One device call: a quick check of the planted slowdown, then paired jobs until the budget.
# usage: benchmarks/gpu_verdicts_device.sh CALL_NAME SECONDS ROUNDS_PER_JOB SCENARIO...
# Run from the carried tree (.gpucarry); raw runs under $OUT/runs (tarred at the end).
set -u
name=$1; budget=$2; rounds=$3; shift 3
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
root=/tmp/$name; mkdir -p $root
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv | tee $root/gpu.csv
python3 -c 'import sys,torch,triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name())'
B="python3 benchmarks/gpu_attention_bench.py --output-json {output}"
if [ "${CHECK:-1}" = 1 ]; then
  python3 benchmarks/gpu_attention_bench.py --output-json $root/check5.json --slowdown 0.05 2>&1 | tail -2
  python3 - $root/check5.json <<'PY'
import json,sys
for e in json.load(open(sys.argv[1])):
    c=e['config']; print(f"{c['backend']:10} {c['batch_spec']:8} {e['mean_time']*1e6:9.1f}us launch {e.get('planted_launch_ratio',0):.3f} in-proc {e.get('planted_ratio_in_process',0):.4f} ok {e.get('planted_ok')} cyc {e.get('planted_cycles')} err {e['error']}")
PY
fi
i=0; per_job=0
for scenario in "$@"; do
  i=$((i+1))
  now=$(date +%s); used=$((now-start))
  if [ $per_job -gt 0 ] && [ $((used+per_job+5)) -gt $budget ]; then echo "stop before job $i ($scenario): ${used}s used, a job takes ~${per_job}s"; break; fi
  case $scenario in
    same) head="$B";; slow5) head="$B --slowdown 0.05";; slow10) head="$B --slowdown 0.10";;
  esac
  t0=$(date +%s)
  python3 -m bot bench run --base "$B" --head "$head" --rounds $rounds --out $root/j$i/$scenario > $root/j$i.md 2> $root/j$i.log
  echo "job $i $scenario rc=$? $(( $(date +%s)-t0 ))s: $(grep -c ': ok' $root/j$i.log) ok runs"
  per_job=$(( $(date +%s)-t0 ))
done
tar czf $OUT/$name.tgz -C /tmp $name
echo "total $(( $(date +%s)-start ))s"
