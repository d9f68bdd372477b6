#!/usr/bin/env bash
# One lent GPU session, in the order that matters most when the time runs out:
#   1. python -m demos info --check          (the four backends, each test-compiled)
#   2. python -m demos record --budget-s B   (every demo at its record sizes, its traces beside it,
#                                             each demo's claims checked; saved after every demo)
#   3. pytest -m gpu                          (the GPU-only tests, each with a time limit)
# Everything lands in DIR as it is made, and DIR/done marks the end, so the chain can run
# detached (setsid) across several calls of the device tool and any call can pack what exists.
# Usage, from the repository root on the GPU machine:
#   setsid bash scripts/gpu_session.sh DIR [RECORD_BUDGET_S] >DIR.log 2>&1 < /dev/null &
# DEMO=a.b,c records only those demos or topics (a record of a few demos sits beside the full
# one: each figure shows the newest record holding it); FIRST="tests/x.py tests/y.py::t" runs
# those GPU tests before the rest.
set -u
dir=${1:?usage: gpu_session.sh DIR [RECORD_BUDGET_S]}
budget=${2:-420}
mkdir -p "$dir"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

stamp "info --check"
timeout 120 "$py" -m demos info --check > "$dir/info.txt" 2>&1
echo "rc=$?" >> "$dir/info.txt"
nvidia-smi > "$dir/nvidia-smi.txt" 2>&1

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | sed 's/NVIDIA //; s/(.*//' \
      | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
name="${gpu:-device}-$(date -u +%F-%H%M%S)"
stamp "record -> $name.json (budget $budget s)"
mkdir -p "$dir/record"
"$py" -m demos record --budget-s "$budget" ${DEMO:+--demo "$DEMO"} --out "$dir/record/$name.json" > "$dir/record.txt" 2>&1
echo "rc=$?" >> "$dir/record.txt"

stamp "pytest -m gpu"
# the tests that never ran on a GPU first, then the rest
first=${FIRST:-}
rest=$(grep -l "mark.gpu" tests/test_*.py | tr '\n' ' ')
for f in $first; do rest=$(echo " $rest " | sed "s# ${f%%::*} # #"); done
files="$first $rest"
timeout 900 "$py" -m pytest -m gpu -v -p no:cacheprovider --timeout 150 $files > "$dir/gpu-tests.txt" 2>&1
echo "rc=$?" >> "$dir/gpu-tests.txt"
stamp "done"
touch "$dir/done"
