#!/bin/bash
# One message of more than 4 GiB between 2 ranks, every byte verified (mpi_huge): past
# 2^31 and 2^32 bytes, where a length kept in an int or a uint32_t wraps and one
# process_vm_readv / _writev moves only part of a copy.  rsm with its defaults (ob1's RDMA
# get: the receiver reads the first half with process_vm_readv while the sender writes
# the second with process_vm_writev), rsm through its pool only (ob1's pipeline of
# fragments), and vader beside them as the control.  Each rank holds one 4 GiB buffer, so
# the job's memory limit is raised to 10 GiB; a machine with less memory available skips
# with the reason.  (pmeth's run of the same program is in t-pmeth-vcluster.)
. "$(dirname "$0")/../lib.sh"
prog=$TOP_BUILDDIR/test/mpi/mpi_huge
[ -x "$prog" ] || { echo "# $prog not built"; exit 1; }

need_mib=10240
avail_mib=$(xb_mem_available_mib)
while IFS=$'\t' read -r name targs; do
    case $name in vader | rsm) ;; *) continue ;; esac
    variants=("$name	$targs")
    [ "$name" = rsm ] && variants+=("rsm, pool only	$targs --mca btl_rsm_single_copy 0")
    for v in "${variants[@]}"; do
        label=${v%%	*} args=${v#*	}
        if [ "$avail_mib" -lt "$need_mib" ]; then
            skip "$label: one message of more than 4 GiB" \
                 "$avail_mib MiB of memory available, the job needs $need_mib"
            continue
        fi
        out=$(XB_JOB_MEM_MIB=$need_mib mpirun_np 2 240 "$args" -- "$prog" 2>&1); rc=$?
        relay_tap "$label: " <<< "$out"
        [ "$rc" -eq 0 ] || { not_ok "$label: mpirun exited $rc"; echo "$out" | tail -20 | diag; }
    done
done < <(transports test)
tap_done
