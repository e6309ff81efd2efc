#!/bin/bash
# The launcher run_test.sh starts in guest a of `scripts/test-rxe.sh two` for the Hydra runs
# (scripts/rxe/two-run.sh), called as: hydra.sh -np N --bind-to none PROGRAM. MPICH's
# mpiexec.hydra, whose PEs speak the PMI wire protocol (PMI-1, or PMI-2 with HOSHMEM_PMI=pmi2),
# not PMIx: one slot per guest in turn, so PEs alternate between them (PE 0 on rxe-a, PE 1 on
# rxe-b, ...). It starts its proxy in rxe-b with ssh (the configuration two-run.sh wrote,
# $RXE_SSH_CONFIG) and talks to it over eth0 (10.0.0.0/24). Hydra passes the whole environment
# on. A copy of stdout and stderr goes to $RXE_STDOUT and $RXE_STDERR.
set -u
[[ ${1:-} == -np && -n ${2:-} ]] || { echo "usage: hydra.sh -np N ARGS..." >&2; exit 2; }
# Hydra runs its launcher as one program: ssh with this configuration, as a script
agent=/tmp/ssh/hydra-ssh
if [[ ! -x $agent ]]; then
  printf '#!/bin/sh\nexec ssh -F %s "$@"\n' "$RXE_SSH_CONFIG" >"$agent.new"
  chmod +x "$agent.new"
  mv "$agent.new" "$agent"
fi
exec mpiexec.hydra -launcher ssh -launcher-exec "$agent" -hosts rxe-a:1,rxe-b:1 -iface eth0 "$@" \
  > >(tee -a "$RXE_STDOUT") 2> >(tee -a "$RXE_STDERR" >&2)
