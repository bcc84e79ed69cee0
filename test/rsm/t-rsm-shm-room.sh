#!/bin/bash
# rsm's areas live in /dev/shm, which a container keeps at 64 MiB unless told
# otherwise.  A /dev/shm too small for them must end the job with a message
# that says so (it was a SIGBUS: the segments are sparse files, and a store into
# a page tmpfs had no room for killed the rank), and with btl_rsm_pool_size at
# its default rsm must size its pools so that a full host of ranks fits.
# The script runs in a mount namespace of its own, where /dev/shm is a tmpfs of
# the size each check needs (root only: mount(2)).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rsm_lib.sh"
prog=$TOP_BUILDDIR/test/mpi/mpi_p2p
[ -x "$prog" ] || { echo "# $prog not built"; exit 1; }
if [ -z "${RSM_SHM_ROOM_NS:-}" ]; then
    if [ "$(id -u)" -ne 0 ] || ! unshare -m --propagation private true 2>/dev/null; then
        skip "rsm with a small /dev/shm" "needs root and unshare -m to mount a /dev/shm of its own"
        tap_done; exit
    fi
    RSM_SHM_ROOM_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
shm() { mount -t tmpfs -o "size=$1,mode=1777" tmpfs /dev/shm; }   # over the last one

# job NP SIZE EXTRA [P2P_ARGS]: mpi_p2p over rsm with /dev/shm of SIZE; output in $work/log,
# rc in $rc, the segments the job left in /dev/shm in $left.
# A job that fails has its help text relayed by mpirun, which Open MPI 4.1 loses now
# and then (ORTE_ERROR_LOG in orte/util/show_help.c, see t-rsm-p2p.sh; on a slow host
# three runs in a row lost it): such a run is tried again, at most twice.  The line
# each rank prints itself as the job ends carries the reason too, and is what is
# required; the help text is required unless mpirun is seen to have lost it.
job() {
    local np=$1 size=$2 extra=$3 args=${4:-} try
    for try in 1 2 3; do
        shm "$size"
        mpirun_np "$np" 120 "$RSM_ARGS --mca btl_base_verbose 10 $extra" -- "$prog" $args >"$work/log" 2>&1; rc=$?
        left=$(rsm_leftovers "$work/log" | wc -l)
        umount /dev/shm
        grep -q 'ORTE_ERROR_LOG: .*show_help\.c' "$work/log" || break
        diag <<< "try $try: mpirun lost a rank's help text (ORTE_ERROR_LOG in show_help.c); again"
    done
}
# help_or_lost PATTERN: the help text has a line matching PATTERN, or mpirun lost it
help_or_lost() {
    grep -q "$1" "$work/log" && return 0
    grep -q 'ORTE_ERROR_LOG: .*show_help\.c' "$work/log" || return 1
    help_lost=" (mpirun lost the help text all 3 times: Open MPI's show_help)"
}
passed() { [ "$rc" -eq 0 ] && grep -q '^1\.\.' "$work/log" && ! grep -q '^not ok' "$work/log"; }
no_sigbus() { ! grep -qi 'bus error\|signal 7' "$work/log"; }

# a user's pool that does not fit: the first message that needs the pool ends the job
pool_refused() {
    [ "$rc" -ne 0 ] && [ "$left" -eq 0 ] && no_sigbus \
        && grep -q 'btl rsm: a message to a rank of this host could not be sent: /dev/shm has [0-9]* bytes free, [0-9]* more are needed for its block pool' "$work/log" \
        && help_or_lost '^its block pool, and /dev/shm has [0-9]* bytes free'
}
help_lost=
job 2 2m "--mca btl_rsm_pool_size 4194304"
pool_refused && r=0 || r=1
said=$(grep -o '/dev/shm has [0-9]* bytes free, [0-9]* more are needed for its block pool' "$work/log" | head -1)
check "/dev/shm of 2 MiB, a 4 MiB pool asked for: the job ends (rc $rc), the rank saying '${said:-nothing}' and the help text 'needs ... more bytes of shared memory in /dev/shm for its block pool'$help_lost, no SIGBUS, no segment left ($left)" [ "$r" -eq 0 ]
[ "$r" -eq 0 ] || tail -15 "$work/log" | diag

# not even the queues fit: the connection is refused with the message, once, and the job ends
queues_refused() {
    local says
    says=$(grep -c 'btl rsm: a connection to a rank of this host could not be made: /dev/shm has [0-9]* bytes free, [0-9]* more are needed for its postbox queues' "$work/log")
    [ "$rc" -ne 0 ] && no_sigbus && [ "$says" -ge 1 ] && [ "$says" -le 2 ] \
        && help_or_lost '^its postbox queues, and /dev/shm has'
}
help_lost=
job 2 200k ""
queues_refused && r=0 || r=1
said=$(grep -o '/dev/shm has [0-9]* bytes free, [0-9]* more are needed for its postbox queues' "$work/log" | head -1)
check "/dev/shm of 200 KiB: the job ends (rc $rc) at the first send, each failing rank saying once '${said:-nothing}', with the help text for its postbox queues$help_lost" [ "$r" -eq 0 ]
[ "$r" -eq 0 ] || tail -15 "$work/log" | diag

# the pool left at its default: rsm fits it to /dev/shm, and the job runs
fitted() { passed && [ "$(grep -c "a pool of $1 bytes instead of 8388608" "$work/log")" -eq "$2" ] && [ "$left" -eq 0 ]; }
job 2 3m ""
check "/dev/shm of 3 MiB, defaults: both ranks take a pool of 256 KiB (2 areas of 512 KiB of queues and the pool in half of /dev/shm), p2p verified (rc $rc)" fitted 262144 2
fitted 262144 2 || tail -15 "$work/log" | diag

# a container's default /dev/shm and a full host of ranks: 16 x (8 MiB + 256 KiB) would
# overfill 64 MiB; with 1 MiB pools the areas take 20 MiB (messages up to 1 MiB: 16 ranks'
# buffers for 16 MiB would pass the job's memory limit)
job 16 64m "" "-M 1048576"
check "/dev/shm of 64 MiB (a container's default), 16 ranks, defaults: pools of 1 MiB on all 16, p2p verified (rc $rc), no segment left ($left)" fitted 1048576 16
fitted 1048576 16 || tail -15 "$work/log" | diag

# where /dev/shm is large, the default pool is kept
kept() { passed && [ "$(grep -c '8912896-byte areas' "$work/log")" -eq 2 ] && ! grep -q 'instead of 8388608' "$work/log"; }
job 2 1g ""
check "/dev/shm of 1 GiB, defaults: the 8 MiB pool is kept (8912896-byte areas: 512 KiB of queues and the pool), p2p verified (rc $rc)" kept
tap_done
