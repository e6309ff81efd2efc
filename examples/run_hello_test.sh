#!/usr/bin/env bash
# hello on 1, 2, 4 and 8 PEs: each PE prints one greeting and PE 0 checks the counter.
set -u
oshrun=$1 hello=$2
for np in 1 2 4 8; do
  out=$(timeout 60 "$oshrun" -np "$np" --bind-to none "$hello" 2>&1) || { echo "np=$np failed: $out"; exit 1; }
  greetings=$(grep -c '^hello from PE' <<<"$out")
  [[ $greetings -eq $np ]] || { echo "np=$np: $greetings greetings: $out"; exit 1; }
  grep -q "counter on PE 0 = $((np * (np + 1) / 2)) (expected .*): ok" <<<"$out" || { echo "np=$np: $out"; exit 1; }
done
echo PASS
