#!/usr/bin/env bash
# --bind-to core pins each PE to its own core (disjoint CPU sets, each smaller than what oshrun
# may use when there is more than one core); --bind-to none leaves the affinity alone;
# more PEs than cores with --bind-to core binds round-robin and warns once.
source "$(dirname "$0")/testlib.sh"
oshrun=$(abspath "$1")
client=$(abspath "$2")
out=$TEST_TMPDIR/out err=$TEST_TMPDIR/err

mine=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status)
cores=$(lscpu -p=core,online 2>/dev/null | grep -v '^#' | awk -F, '$2 == "Y"' | sort -u | wc -l)
ncpus=$(nproc)
((cores >= 1)) || cores=$ncpus
n=$((cores < 2 ? 1 : 2))
echo "oshrun may use CPUs $mine ($ncpus CPUs, $cores cores); binding $n PEs"

run_job 30 "$out" "$err" "$oshrun" -np "$n" --bind-to core "$client" --print-affinity "$marker"
if ((rc != 0)); then
  fail "--bind-to core: status $rc: $(cat "$err")"
else
  sets=$(awk '$1 == "affinity" { print $5 }' "$out" | sort)
  [[ $(echo "$sets" | wc -l) -eq $n ]] || fail "--bind-to core: expected $n affinity lines"
  all=$(echo "$sets" | tr ',' '\n' | sort -n)
  [[ $(echo "$all" | uniq -d | wc -l) -eq 0 ]] || fail "--bind-to core: PEs share CPUs: $sets"
  if ((ncpus > 1)); then
    for s in $sets; do
      [[ $(echo "$s" | tr ',' '\n' | wc -l) -lt $ncpus ]] || fail "--bind-to core: a PE is not bound: $s"
    done
  fi
  pass "--bind-to core: $(echo $sets)"
fi

run_job 30 "$out" "$err" "$oshrun" -np 2 --bind-to none "$client" --print-affinity "$marker"
((rc == 0)) || fail "--bind-to none: status $rc: $(cat "$err")"
# Our own CPU list, ranges (0-3,6) expanded to the client's format (0,1,2,3,6).
want=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status | tr ',' '\n' |
  awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }' | paste -sd,)
for s in $(awk '$1 == "affinity" { print $5 }' "$out"); do
  [[ $s == "$want" ]] || fail "--bind-to none: PE affinity $s differs from oshrun's $want"
done
pass "--bind-to none"

over=$((cores + 1))
run_job 30 "$out" "$err" "$oshrun" -np "$over" --bind-to core "$client" --print-affinity "$marker"
((rc == 0)) || fail "oversubscribed --bind-to core: status $rc: $(cat "$err")"
[[ $(grep -c 'warning: --bind-to core' "$err") -eq 1 ]] && pass "oversubscribed --bind-to core warns once" ||
  fail "oversubscribed --bind-to core: expected one warning, got: $(cat "$err")"
check_no_leftovers "binding"
finish
