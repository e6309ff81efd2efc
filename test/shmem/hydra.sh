#!/usr/bin/env bash
# MPICH's Hydra as run_test.sh's launcher: its PEs reach it over the PMI wire protocol (PMI_FD),
# not PMIx. Hydra passes the whole environment on to them.
if ! command -v mpiexec.hydra >/dev/null; then
  echo "hydra.sh: mpiexec.hydra not found (Debian package mpich)" >&2
  exit 127
fi
exec mpiexec.hydra "$@"
