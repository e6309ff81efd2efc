# Sourced by the UCX tests (ucx_test.sh, ucx_roce_test.sh): the model selected for UCX (from the
# test's runfiles, else built by with-softhca), a skip where UCX is not installed, a scratch
# directory and fabric token, and one ucx_perftest server/client pair on a port.
#   ucx_setup NAME     sets wrap, tmp, token (removed at exit); exits 0 saying SKIPPED without UCX
#   ucx_pair PORT TIMEOUT ENV... -- CLIENT_ARGS...
#                      0 ok (the client printed its Final line), 1 failed, 2 port taken; the
#                      server's and client's output stay in $tmp/srv and $tmp/cli
ucx_setup() {
  local name=$1 dir="${TEST_SRCDIR:-}/hoshmem/test/softhca/softlib"
  wrap=()
  if [[ -n "${TEST_SRCDIR:-}" && -d "$dir" ]]; then
    export LD_LIBRARY_PATH="$dir"
    export LD_PRELOAD="$dir/libsofthca_kernel.so"
  else
    wrap=("$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/with-softhca")
    "${wrap[@]}" true || exit 1  # build once, before server and client start together
  fi
  if ! command -v ucx_info >/dev/null || ! command -v ucx_perftest >/dev/null; then
    echo "SKIPPED: UCX is not installed (apt-get install ucx-utils; see scripts/debian-packages.txt)"
    exit 0
  fi
  tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/$name.XXXXXX")
  token="$name$(od -An -N5 -tx1 /dev/urandom | tr -d ' \n')"
  trap 'rm -rf "$tmp"; rm -f /dev/shm/softhca."$token"*' EXIT
  export UCX_VFS_ENABLE=n  # no UCX VFS daemon socket
  export UCX_NET_DEVICES=mlx5_0:1
  export TMPDIR="$tmp"
}

ucx_pair() {
  local port=$1 limit=$2; shift 2
  local env=()
  while [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  export SOFTHCA_FABRIC="$token-$port"  # each pair a fabric of its own
  env "${env[@]}" timeout "$limit" stdbuf -oL "${wrap[@]}" ucx_perftest -p "$port" >"$tmp/srv" 2>&1 &
  local srv=$! rc=1
  for _ in $(seq 300); do  # until the server listens (it says so), at most 30 s
    grep -q "Waiting for connection" "$tmp/srv" 2>/dev/null && break
    kill -0 $srv 2>/dev/null || break
    sleep 0.1
  done
  for _ in $(seq 100); do
    env "${env[@]}" timeout "$limit" "${wrap[@]}" ucx_perftest localhost -p "$port" -n 200 -w 20 "$@" \
      >"$tmp/cli" 2>&1 && { rc=0; break; }
    grep -q "connect() failed\|Connection refused" "$tmp/cli" || break
    kill -0 $srv 2>/dev/null || break
    sleep 0.1  # server not listening yet
  done
  ((rc)) && kill $srv 2>/dev/null
  wait $srv || rc=1
  rm -f /dev/shm/softhca."$SOFTHCA_FABRIC"*
  grep -q "Address already in use" "$tmp/srv" && return 2
  grep -q "^Final:" "$tmp/cli" || rc=1
  return $rc
}
