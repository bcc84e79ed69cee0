#!/bin/sh
# One rank under valgrind's callgrind (bench/rsm-verbs-guest.sh with PROFILE=callgrind): the
# profile goes to $XB_CG_DIR/cg.$XB_CG_NAME.<rank in MPI_COMM_WORLD>.
exec valgrind -q --tool=callgrind \
    --callgrind-out-file="$XB_CG_DIR/cg.$XB_CG_NAME.${OMPI_COMM_WORLD_RANK:-0}" "$@"
