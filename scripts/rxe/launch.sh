#!/bin/bash
# The launcher run_test.sh starts in the guest (scripts/rxe/guest-run.sh): oshrun itself, with a
# copy of its stderr (the launcher's and the PEs') in $RXE_STDERR, so that the runner can show
# the line a failing job ends with even when the test passed.
exec "$OSHRUN" "$@" 2> >(tee -a "$RXE_STDERR" >&2)
