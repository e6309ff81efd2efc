#!/usr/bin/env bash
# Launcher adapter used to validate the tests against Open MPI's OSHMEM (reference implementation):
# same command line as hoshmem's oshrun (-np N --bind-to none PROGRAM).
# UCX over tcp: with its shared-memory transports, OSHMEM 4.1.4 loses concurrent non-fetching AMOs
# (they complete only when the target happens to progress).
export OMPI_MCA_osc=^rdma UCX_TLS=${UCX_TLS:-tcp}
exec oshrun --allow-run-as-root --oversubscribe "$@"
