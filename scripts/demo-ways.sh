#!/usr/bin/env bash
# The second half of scripts/demo.sh: examples/histogram.c (a shared counter and a histogram,
# updated with AMOs from every PE, each result checked) run three ways, one line each with the
# mode and transport SHMEM_INFO reports and the time the run took:
#   one node, all-SW: shared memory and CPU atomics;
#   two "nodes" of this machine on the software HCA (test/softhca), all-HW over RC: every AMO an
#     HCA atomic, loopback to the PEs of its own node included;
#   the same two nodes in all-SW mode over UD, PE 0 computing outside the library: its memory is
#     updated by its progress thread.
#
#   scripts/demo-ways.sh OSHRUN PROGRAM SOFTHCA_LIB_DIR
#
# NP (default 4, even) PEs; exits non-zero if a run failed or a check was wrong.
set -uo pipefail
oshrun=$1 program=$2 softlib=$3
np=${NP:-4}
fabric="demo$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
out=$(mktemp "${TMPDIR:-/tmp}/demo.XXXXXX")
trap 'rm -f "$out"; rm -f /dev/shm/softhca."$fabric"*' EXIT
status=0

# run LABEL ENV... -- ARGS...: one line for one run.
run() {
  local label=$1; shift
  local env=()
  while [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  local start=$SECONDS
  env "${env[@]}" SHMEM_INFO=1 SOFTHCA_FABRIC="$fabric" timeout 120 \
    "$oshrun" -np "$np" "$program" "$@" >"$out" 2>&1
  local rc=$? took=$((SECONDS - start))
  local result config
  result=$(grep -E '^[0-9]+ PEs ' "$out" | tail -1)
  config=$(sed -n 's/^  atomicity mode: \([^ ]*\).*/\1/p; s/^  transport: \([a-z]*\).*/\1/p' "$out" |
    paste -sd ' ' | sed 's/ \([a-z]*\)$/ over \1/; s/ over none$/ over shared memory/')
  if ((rc != 0)) || [[ -z $result || $result == *WRONG* ]]; then
    status=1
    printf '   %-46s FAILED (exit %d)\n' "$label" "$rc"
    tail -5 "$out" | sed 's/^/      /'
    return
  fi
  printf '   %-46s %s  [%s, %ds]\n' "$label" "$result" "$config" "$took"
}

echo "== examples/histogram.c: a counter and a histogram updated with AMOs from every PE, three ways"
run "one node, all-SW (CPU atomics)" HOSHMEM_ATOMICS=sw -- 20000
run "2 nodes on the software HCA, all-HW over RC" \
  LD_LIBRARY_PATH="$softlib" HOSHMEM_PES_PER_NODE=$((np / 2)) HOSHMEM_ATOMICS=hw \
  HOSHMEM_TRANSPORT=rc -- 5000
run "2 nodes, all-SW over UD, PE 0 computing" \
  LD_LIBRARY_PATH="$softlib" HOSHMEM_PES_PER_NODE=$((np / 2)) HOSHMEM_ATOMICS=sw \
  HOSHMEM_TRANSPORT=ud -- 5000 busy
echo "   What the modes and transports are: README.md, \"Atomicity modes and transports\"."
exit $status
