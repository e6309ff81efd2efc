#!/usr/bin/env bash
# Another local user cannot join a job and end it. oshrun's PMIx server listens on TCP 127.0.0.1,
# where PMIx trusts the uid a client sends; an LD_PRELOAD shim makes a client of another user claim
# the job owner's uid. As that user, with the server's port (from /proc/net/tcp) and everything it
# can learn, a client tries to join a running job and PMIx_Abort(77) it: every attempt must be
# refused and the job must complete with status 0. Attempts: the namespace oshrun used to have
# (oshrun.<directory suffix>.<pid>, from `ls` and `ps`), reading a PE's /proc/PID/environ (must be
# denied), and the real namespace handed over by root (the kernel-vouched uid check must refuse it
# and oshrun say so). Needs root, to add a throwaway user; otherwise not run.
source "$(dirname "$0")/testlib.sh"
oshrun=$(abspath "$1")
client=$(abspath "$2")
shim=$(abspath "$3")
out=$TEST_TMPDIR/out err=$TEST_TMPDIR/err
if ((EUID != 0)); then
  echo "not run: needs root (to add a throwaway user)"
  finish
  exit 0
fi
for tool in useradd userdel setpriv id; do
  command -v $tool >/dev/null || { fail "$tool not found (passwd, util-linux)"; finish; }
done

user=oshi$$$RANDOM
user=${user:0:30}
useradd -M -N -s /usr/sbin/nologin "$user" || { fail "useradd $user failed"; finish; }
work=$(mktemp -d /tmp/oli.XXXXXX)
base=$(mktemp -d /tmp/olb.XXXXXX)
job=
cleanup() {
  [[ -n $job ]] && kill -KILL "$job" 2>/dev/null
  userdel "$user" 2>/dev/null
  rm -rf "$work" "$base"
}
trap cleanup EXIT
trap 'exit 1' INT TERM  # so that the EXIT trap removes the user when the test is stopped
uid=$(id -u "$user")
gid=$(id -g "$user")
# The runfiles are under root's 0700 home: give the other user copies it can run.
chmod 755 "$work"
cp "$client" "$work/pmix_client"
cp "$shim" "$work/libfake_uid.so"
chmod 755 "$work/pmix_client" "$work/libfake_uid.so"
mkdir "$work/tmp"
chown "$uid:$gid" "$work/tmp"
# The job's base directory is world-writable and sticky, like /tmp (its listing is public).
chmod 1777 "$base"

as_user() { (cd "$work" && setpriv --reuid="$uid" --regid="$gid" --clear-groups "$@"); }

TMPDIR=$base timeout -k 2 60 "$oshrun" -np 2 "$client" --wait-file "$base/go" --print-tmpdir "$marker" \
  >"$out" 2>"$err" &
job=$!
for _ in $(seq 300); do
  [[ $(grep -c '^tmpdir' "$out") -ge 2 ]] && break
  sleep 0.1
done
osh=$(pgrep -P "$job" | head -1)
pe=$(pgrep -P "$osh" | head -1)
# The server's port: the listening socket among oshrun's descriptors (an intruder would try every
# listening port on 127.0.0.1; this makes the test deterministic).
port=
for fd in /proc/"$osh"/fd/*; do
  ino=$(readlink "$fd" | sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p')
  [[ -n $ino ]] || continue
  hex=$(awk -v ino="$ino" '$4 == "0A" && $10 == ino { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6)
  [[ -n $hex ]] && port=$((16#$hex))
done
if [[ -z $pe || -z $port ]]; then
  fail "the job did not start (oshrun '$osh', PE '$pe', port '$port'): $(cat "$out" "$err")"
  finish
fi

# intrude NAME NSPACE HOW: a PMIx client joins as rank 0 of NSPACE: as the other user claiming the
# owner's ids (shim), as the other user (self), or as the owner itself (owner: only the secret
# namespace keeps it out, which shows that the namespace cannot be guessed).
intrude() {
  local name=$1 nspace=$2 how=$3 run=(as_user) preload=()
  [[ $how == shim ]] && preload=(LD_PRELOAD="$work/libfake_uid.so" FAKE_UID="$(id -u)" FAKE_GID="$(id -g)")
  [[ $how == owner ]] && run=()
  "${run[@]}" timeout -k 2 20 env -i PATH=/usr/bin:/bin HOME="$work" TMPDIR="$work/tmp" \
    PMIX_SERVER_URI41="intruder.0;tcp4://127.0.0.1:$port" PMIX_SECURITY_MODE=native \
    PMIX_BFROP_BUFFER_TYPE=PMIX_BFROP_BUFFER_NON_DESC PMIX_GDS_MODULE=hash \
    PMIX_SERVER_TMPDIR="$work/tmp" PMIX_SYSTEM_TMPDIR="$work/tmp" \
    PMIX_NAMESPACE="$nspace" PMIX_RANK=0 "${preload[@]}" "$work/pmix_client" --intrude 77 "$marker" \
    >"$out.i" 2>&1
  local irc=$?
  if grep -q '^intruder joined' "$out.i"; then
    fail "$name: the intruder joined the job: $(cat "$out.i")"
  elif ((irc == 124 || irc == 137)); then
    fail "$name: the intruder's PMIx_Init hung"
  else
    pass "$name: refused ($(head -1 "$out.i"))"
  fi
}

# What the other user sees: the directory's name, oshrun's command line and PID.
suffix=$(as_user ls "$base" | sed -n 's/^oshrun\.//p' | head -1)
cmdline=$(as_user cat /proc/"$osh"/cmdline | tr '\0' ' ')
[[ -n $suffix ]] || fail "the other user cannot list $base"
for guess in "oshrun.$suffix.$osh" "oshrun.$suffix"; do
  intrude "guessed namespace $guess, claiming the owner's uid" "$guess" shim
  intrude "guessed namespace $guess, as the owner" "$guess" owner
done
# The real namespace must be nowhere the other user can read.
nspace=$(tr '\0' '\n' </proc/"$pe"/environ | sed -n 's/^PMIX_NAMESPACE=//p')
if as_user cat /proc/"$pe"/environ >/dev/null 2>&1; then
  fail "the other user can read a PE's /proc/PID/environ"
else
  pass "the other user cannot read a PE's environment"
fi
if [[ -z $nspace ]]; then
  fail "cannot read the job's namespace from PE $pe (is the job still running?)"
elif [[ $cmdline == *"$nspace"* ]]; then
  fail "oshrun's command line shows the namespace"
fi
as_user ls "$base/oshrun.$suffix" >/dev/null 2>&1 && fail "the other user can list the job's directory"
# Defence in depth: even knowing the namespace, a connection from another uid is refused.
intrude "the real namespace, claiming the owner's uid" "$nspace" shim
intrude "the real namespace, as itself" "$nspace" self

touch "$base/go"
wait "$job"
rc=$?
if ((rc == 0)) && [[ $(grep -c '^ok rank' "$out") -eq 2 ]]; then
  pass "the job completed with status 0"
else
  fail "the job: status $rc, expected 0; stderr: $(cat "$err")"
fi
# oshrun reports refused connections (once per uid); nothing else.
if grep -qx "oshrun: refused a PMIx connection from uid $uid (not the job's owner)" "$err" &&
   [[ $(grep -c '^oshrun:' "$err") -eq 1 ]]; then
  pass "oshrun reported the refused uid $uid"
else
  fail "expected one line 'oshrun: refused a PMIx connection from uid $uid (not the job's owner)', got: $(cat "$err")"
fi
check_no_leftovers "intruder"
finish
