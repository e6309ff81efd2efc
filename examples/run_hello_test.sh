#!/usr/bin/env bash
# hello on 1, 2, 4 and 8 PEs under oshrun, as a singleton, and under mpirun: each PE prints one
# greeting and PE 0 checks the counter.
set -u
oshrun=$1 hello=$2
for np in 1 2 4 8; do
  out=$(timeout 60 "$oshrun" -np "$np" --bind-to none "$hello" 2>&1) || { echo "np=$np failed: $out"; exit 1; }
  greetings=$(grep -c '^hello from PE' <<<"$out")
  [[ $greetings -eq $np ]] || { echo "np=$np: $greetings greetings: $out"; exit 1; }
  grep -q "counter on PE 0 = $((np * (np + 1) / 2)) (expected .*): ok" <<<"$out" || { echo "np=$np: $out"; exit 1; }
done
# Without a launcher: a singleton job of one PE.
out=$(timeout 60 "$hello" 2>&1) || { echo "singleton failed: $out"; exit 1; }
grep -q "hello from PE 0 of 1" <<<"$out" && grep -q "counter on PE 0 = 1 (expected 1): ok" <<<"$out" ||
  { echo "singleton: $out"; exit 1; }
# Under Open MPI's mpirun, an external PMIx server.
if command -v mpirun >/dev/null; then
  out=$(timeout 60 mpirun --allow-run-as-root --oversubscribe -np 3 "$hello" 2>&1) ||
    { echo "mpirun failed: $out"; exit 1; }
  [[ $(grep -c '^hello from PE' <<<"$out") -eq 3 ]] && grep -q "counter on PE 0 = 6 (expected 6): ok" <<<"$out" ||
    { echo "mpirun: $out"; exit 1; }
fi
echo PASS
