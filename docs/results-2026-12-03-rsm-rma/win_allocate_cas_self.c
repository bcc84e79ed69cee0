/* MPI_Win_allocate on one host, then every rank does one compare-and-swap on the
 * last rank's window (the last rank on its own).  Over self,vader on Debian's Open
 * MPI 4.1.4 (osc rdma, vader without xpmem) the last rank crashes in
 * mca_btl_vader_emu_acswap: osc rdma hands its own rank's atomics to the BTL with
 * no endpoint.  Over self,rsm the results are 0 and 1 (one rank each).
 *   mpicc -o cas win_allocate_cas_self.c
 *   mpirun -np 2 --mca pml ob1 --mca btl self,vader ./cas      # segfault
 *   mpirun -np 2 --mca pml ob1 --mca btl self,rsm ./cas        # res 0 / res 1 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int r, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    unsigned char *base;
    MPI_Win w;
    MPI_Win_allocate(1 << 20, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
    MPI_Win_lock_all(0, w);
    int64_t cur = 0, next = 1, res;
    MPI_Compare_and_swap(&next, &cur, &res, MPI_INT64_T, n - 1, 8200, w);
    MPI_Win_flush(n - 1, w);
    MPI_Win_unlock_all(w);
    printf("rank %d res %ld\n", r, (long) res);
    MPI_Win_free(&w);
    MPI_Finalize();
    return 0;
}
