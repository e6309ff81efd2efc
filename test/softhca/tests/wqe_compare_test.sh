#!/usr/bin/env bash
# The mlx5 WQEs unmodified UCX writes (ucx_perftest's UCT tests over rc_mlx5 and dc_mlx5, DevX
# path) against hoshmem's for the same operations (tests/wqe_ops.c), field by field, from the
# model's SOFTHCA_WQE_LOG: 8-byte put inline, zero-copy put, get, 64-bit add, fetch-add,
# compare-swap and swap, 32-bit (masked) add, fetch-add, compare-swap and swap, over RC and over
# DC with its address vector (compact; 48-byte; with a GRH; RoCE). tests/wqe_compare.py runs the
# programs, decodes, compares and prints the table; see its header for what may differ and why.
# Skipped, saying so, only where UCX is not installed.
#   wqe_compare_test.sh OSHRUN WQE_OPS WQE_COMPARE_PY   (WQE_COMPARE_CONFIGS=rc,dc restricts)
set -uo pipefail
oshrun=$1 ops=$2 compare=$3
if [[ -n "${TEST_SRCDIR:-}" && -d "$TEST_SRCDIR/hoshmem/test/softhca/softlib" ]]; then
  softlib="$TEST_SRCDIR/hoshmem/test/softhca/softlib"
else
  softlib="$(cd "$(dirname "$0")/.." && pwd)/softlib"
fi
if ! command -v ucx_perftest >/dev/null; then
  echo "SKIPPED: UCX is not installed (apt-get install ucx-utils; see scripts/debian-packages.txt)"
  exit 0
fi
if ! command -v python3 >/dev/null; then
  echo "python3 is needed to decode the WQEs"; exit 1
fi
exec python3 "$compare" --oshrun "$oshrun" --ops "$ops" --softlib "$softlib" \
  ${WQE_COMPARE_CONFIGS:+--configs "$WQE_COMPARE_CONFIGS"}
