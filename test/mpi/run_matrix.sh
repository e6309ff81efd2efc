#!/usr/bin/env bash
# MPI and OpenSHMEM in one program (mpi_shmem.c) under Debian's Open MPI mpirun: every init
# order, finalize order and job-ending abort, at 2 and 4 processes, in one configuration:
#
#   run_matrix.sh CONFIG PROGRAM [SOFTHCA_LIBIBVERBS]
#     one-node   hoshmem on one node (shared memory); Open MPI as Debian configures it
#     hw-rc      every PE its own node over the software HCA, all-HW atomics over RC; Open MPI
#                restricted to --mca pml ob1 --mca btl self,vader,tcp (it never opens the HCA)
#     sw-ud      the same, all-SW atomics over UD
#     ucx-hw-rc  hw-rc with Open MPI's UCX PML on the same HCA (UCX_TLS=rc_mlx5,ud_mlx5:aux,self):
#                both libraries drive the model HCA in every process
#     ucx-sw-ud  sw-ud with UCX's ud_mlx5 (UCX_TLS=ud_mlx5,self)
#
# A case passes when mpirun's status is the expected one (0, or 7 for MPI_Abort(7) and
# shmem_global_exit(7)), every rank wrote its PID, no rank printed FAIL, rank 0's SHMEM_INFO shows
# the configuration, and no process of the job is left when mpirun returns (a process of the job
# still has the case's marker on its command line; a dead one, even unreaped, does not). A normal
# case also needs every rank's "ok" and "done" lines; an abort must end the job within
# $ABORT_LIMIT_S seconds of the call. mpirun's "MPI_ABORT was invoked" report is not required:
# Open MPI 4.1.4 sometimes garbles it ("ORTE_ERROR_LOG: Data unpack would read past end of buffer
# in file ../../../orte/util/show_help.c"), without hoshmem too.
set -uo pipefail

config=${1:?usage: run_matrix.sh CONFIG PROGRAM [SOFTHCA_LIBIBVERBS]}
prog=${2:?usage: run_matrix.sh CONFIG PROGRAM [SOFTHCA_LIBIBVERBS]}
softhca=${3:-}
case $prog in /*) ;; *) prog=$PWD/$prog ;; esac
tmp=${TEST_TMPDIR:-$(mktemp -d)}
RUN_LIMIT_S=${RUN_LIMIT_S:-90}    # one mpirun, under `timeout`
ABORT_LIMIT_S=${ABORT_LIMIT_S:-10}
EXPECT_ABORT_STATUS=${EXPECT_ABORT_STATUS:-7}

failures=0 cases=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

if ! command -v mpirun >/dev/null; then
  echo "FAIL: mpirun not found (install openmpi-bin)"
  exit 1
fi

# ---- the configuration: mpirun's options and what rank 0's SHMEM_INFO must say ----
mpirun_opts=(--allow-run-as-root --oversubscribe -x SHMEM_INFO=1)
expect_info=()
expect_info_normal=()
fabrics=()
trap 'for f in "${fabrics[@]}"; do rm -f "/dev/shm/softhca.$f"; done' EXIT
case $config in
  one-node)
    expect_info=("PEs: {np}, {np} on this node, launcher: pmix") ;;
  hw-rc | sw-ud | ucx-hw-rc | ucx-sw-ud)
    [[ -f $softhca ]] ||
      { echo "FAIL: $config needs the model's libibverbs.so.1 (got '$softhca')"; exit 1; }
    softlib=$(cd "$(dirname "$softhca")" && pwd)
    mpirun_opts+=(-x "LD_LIBRARY_PATH=$softlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      -x HOSHMEM_PES_PER_NODE=1)
    expect_info=("PEs: {np}, 1 on this node (HOSHMEM_PES_PER_NODE), launcher: pmix")
    case $config in
      *hw-rc)
        mpirun_opts+=(-x HOSHMEM_ATOMICS=hw -x HOSHMEM_TRANSPORT=rc)
        expect_info+=("atomicity mode: all-hw" "transport: rc (RMA to other nodes and every AMO") ;;
      *sw-ud)
        mpirun_opts+=(-x HOSHMEM_ATOMICS=sw -x HOSHMEM_TRANSPORT=ud)
        expect_info+=("atomicity mode: all-sw" "transport: ud (puts, gets, AMOs") ;;
    esac
    case $config in
      ucx-*)
        # UCX looks for the device's kernel interfaces first (the model's preload shim gives
        # them). UCX installs its own SIGSEGV handler (UCX_ERROR_SIGNALS) after hoshmem's queues
        # rang their doorbells when shmem_init comes first: the model puts its doorbell handler
        # back in front at every queue UCX creates (test/softhca/README.md, "Raw doorbells").
        [[ -f $softlib/libsofthca_kernel.so ]] ||
          { echo "FAIL: no $softlib/libsofthca_kernel.so"; exit 1; }
        tls=ud_mlx5,self
        [[ $config == *hw-rc ]] && tls=rc_mlx5,ud_mlx5:aux,self
        mpirun_opts+=(--mca pml ucx -x "LD_PRELOAD=$softlib/libsofthca_kernel.so"
          -x "UCX_TLS=$tls" -x UCX_LOG_LEVEL=info -x UCX_LOG_FILE=stderr)
        # UCX's endpoint configurations name the transports it opened: the model's device,
        # the only one UCX_TLS leaves for messages between ranks. The configuration of the
        # rank's own endpoint is printed inside MPI_Init; a peer's only once its wireup is
        # done, which can come after the program's last message (then never): the first is
        # the one checked, and in the runs that end normally.
        expect_info_normal+=("ep_cfg\\[[0-9]\\]: tag(.*${tls%%,*}/mlx5_0:1") ;;
      *)
        mpirun_opts+=(--mca pml ob1 --mca btl self,vader,tcp) ;;
    esac ;;
  *) echo "FAIL: unknown configuration '$config'"; exit 1 ;;
esac

# Every process of the job still running: its command line has the case's marker.
leftovers() {
  local marker=$1 f pid
  for f in "$2"/pid.*; do
    [[ -f $f ]] || continue
    pid=$(<"$f")
    tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$marker" && echo "$pid"
  done
  pgrep -f -- "$marker" || true
}

# seconds_between T0 T1: T1 - T0, to the hundredth
seconds_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# run_case NP INIT FINALIZE END
run_case() {
  local np=$1 init=$2 fin=$3 end=$4
  cases=$((cases + 1))
  local name="np $np, $init init, $fin finalize, $end"
  local dir=$tmp/case$cases marker="mpitest-$$-$cases-$RANDOM$RANDOM"
  local fabric
  fabric="mpitest-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
  fabrics+=("$fabric")
  mkdir -p "$dir/pids"
  # Each rank's output in its own files (DIR/ranks/JOB/rank.R/std{out,err}): mpirun's own
  # stdout interleaves the ranks' chunks, even within a line.
  local start stop rc
  start=$(date +%s.%N)
  timeout -k 5 "$RUN_LIMIT_S" mpirun "${mpirun_opts[@]}" -x "SOFTHCA_FABRIC=$fabric" \
    --output-filename "$dir/ranks" -np "$np" \
    "$prog" "$init" "$fin" "$end" "$dir/pids" "$marker" >"$dir/out" 2>"$dir/err"
  rc=$?
  stop=$(date +%s.%N)
  local left
  left=$(leftovers "$marker" "$dir/pids" | sort -u | tr '\n' ' ')
  rm -f "/dev/shm/softhca.$fabric"

  local why=() n r want
  ((rc == 124 || rc == 137)) && why+=("timed out after ${RUN_LIMIT_S}s")
  [[ -n $left ]] && why+=("processes left after mpirun returned: $left")
  n=$(find "$dir/pids" -name 'pid.*' | wc -l)
  ((n == np)) || why+=("$n of $np ranks wrote their PID")
  local fails
  fails=$(cat "$dir/out" "$dir/err" "$dir"/ranks/*/rank.*/std* 2>/dev/null | grep -a FAIL | sort -u)
  [[ -n $fails ]] && why+=("a rank failed: $(head -3 <<<"$fails")")
  local rank0
  rank0=$(cat "$dir"/ranks/*/rank.0/stdout "$dir"/ranks/*/rank.0/stderr 2>/dev/null)
  local wants=("${expect_info[@]}")
  [[ $end == normal ]] && wants+=("${expect_info_normal[@]}")
  for want in "${wants[@]}"; do
    want=${want//\{np\}/$np}
    grep -q -- "$want" <<<"$rank0" || why+=("no '$want' in rank 0's output")
  done
  local detail
  if [[ $end == normal ]]; then
    ((rc == 0)) || why+=("status $rc, expected 0")
    for ((r = 0; r < np; r++)); do
      grep -qx "ok rank $r of $np: $init init, pid [0-9]*" \
        "$dir"/ranks/*/rank.$r/stdout 2>/dev/null ||
        why+=("rank $r did not report its work")
      grep -qx "done rank $r of $np: $fin finalize" "$dir"/ranks/*/rank.$r/stdout 2>/dev/null ||
        why+=("rank $r did not report its finalize")
    done
    detail="status 0 in $(seconds_between "$start" "$stop")s"
  else
    ((rc == EXPECT_ABORT_STATUS)) || why+=("status $rc, expected $EXPECT_ABORT_STATUS")
    if [[ ! -s $dir/pids/abort ]]; then
      why+=("the last rank did not record its abort call")
    else
      local called after
      called=$(<"$dir/pids/abort")
      after=$(seconds_between "$called" "$stop")
      awk -v a="$called" -v b="$stop" -v l="$ABORT_LIMIT_S" 'BEGIN { exit !(b - a <= l) }' ||
        why+=("the job ended ${after}s after the call (limit ${ABORT_LIMIT_S}s)")
      detail="status $rc ${after}s after the call, no process left"
    fi
  fi
  if ((${#why[@]})); then
    fail "$config, $name:"
    local w
    for w in "${why[@]}"; do echo "    $w"; done
    echo "    --- mpirun's stdout (end) ---"
    grep -av '^  [A-Z_]*  ' "$dir/out" | tail -15 | sed 's/^/    /'
    echo "    --- mpirun's stderr (end) ---"
    grep -av 'UCX  INFO\|UCX  DIAG' "$dir/err" | tail -15 | sed 's/^/    /'
  else
    pass "$config, $name: $detail"
  fi
}

echo "mpirun options: ${mpirun_opts[*]}"
nps=(2 4)
for np in "${nps[@]}"; do
  for init in mpi-first shmem-first; do
    for fin in shmem-first mpi-first implicit; do
      run_case "$np" "$init" "$fin" normal
    done
    run_case "$np" "$init" implicit mpi-abort
    run_case "$np" "$init" implicit global-exit
  done
done

if ((failures)); then
  echo "$failures of $cases cases failed"
  exit 1
fi
echo "all $cases cases passed"
