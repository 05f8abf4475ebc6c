#!/bin/bash
# Run all 24 programs as written (TensorFlow on CPU), two at a time, and print each one's
# exit code, seconds and last line: NONFINITE step=N (exit 3) for the buggy ones, FINITE for
# the twins.  Logs go to ./logs/.
cd "$(dirname "$0")" || exit 2
mkdir -p logs
run() { f=$1; s=$(date +%s.%N); timeout 120 python "$f" > "logs/$(echo "$f" | tr / _).out" 2>/dev/null; rc=$?; e=$(date +%s.%N); echo "$f rc=$rc t=$(echo "$e - $s" | bc) $(tail -1 "logs/$(echo "$f" | tr / _).out")"; }
export -f run
ls buggy/*.py clean/*.py | xargs -P 2 -I{} bash -c 'run {}'
