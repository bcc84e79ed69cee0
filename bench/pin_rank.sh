#!/bin/sh
# compare.py --cluster-cpus: run this rank on the CPU XB_PIN_CPUS names for it (a comma
# list, the rank's entry by OMPI_COMM_WORLD_RANK), then the benchmark.
r=${OMPI_COMM_WORLD_RANK:?not started by mpirun}
cpu=$(printf '%s\n' "${XB_PIN_CPUS:?}" | cut -d, -f$((r + 1)))
[ -n "$cpu" ] || { echo "pin_rank: no CPU for rank $r in XB_PIN_CPUS=$XB_PIN_CPUS" >&2; exit 2; }
exec taskset -c "$cpu" "$@"
