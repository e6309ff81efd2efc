#!/usr/bin/env bash
# Launcher adapter used to validate the tests against Open MPI's OSHMEM (reference implementation):
# same command line as hoshmem's oshrun (-np N --bind-to none PROGRAM).
export OMPI_MCA_osc=^rdma UCX_TLS=^self
exec oshrun --allow-run-as-root --oversubscribe "$@"
