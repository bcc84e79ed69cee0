/*
 * One-element one-sided operations on MPI_DOUBLE, timed: rank 0 issues N of each
 * to rank 1 in a passive-target epoch (MPI_Win_lock_all), flushing after each, and
 * prints the mean time per operation, over the BTL (a window of private memory).  The window's final value is checked.
 *   mpicc -O2 acc_rate.c -o acc_rate; mpirun -np 2 ... ./acc_rate [N]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n = argc > 1 ? atoi(argv[1]) : 20000;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* MPI_Win_create on private memory: MPI_Win_allocate on one host gives osc rdma
     * a shared segment, where it applies atomics with the CPU and no BTL is asked */
    double *base = malloc(sizeof(double));
    MPI_Win win;
    MPI_Win_create(base, sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    *base = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    double one = 1.0, old = 0.0, t_acc = 0, t_fop = 0, t_gacc = 0;
    if (rank == 0) {
        MPI_Win_lock_all(0, win);
        double t = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            MPI_Accumulate(&one, 1, MPI_DOUBLE, 1, 0, 1, MPI_DOUBLE, MPI_SUM, win);
            MPI_Win_flush(1, win);
        }
        t_acc = (MPI_Wtime() - t) / n;
        t = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            MPI_Fetch_and_op(&one, &old, MPI_DOUBLE, 1, 0, MPI_SUM, win);
            MPI_Win_flush(1, win);
        }
        t_fop = (MPI_Wtime() - t) / n;
        t = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            MPI_Get_accumulate(&one, 1, MPI_DOUBLE, &old, 1, MPI_DOUBLE, 1, 0, 1, MPI_DOUBLE,
                               MPI_SUM, win);
            MPI_Win_flush(1, win);
        }
        t_gacc = (MPI_Wtime() - t) / n;
        MPI_Win_unlock_all(win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int bad = rank == 1 && *base != 3.0 * n;
    if (rank == 1 && bad) {
        printf("acc_rate: window holds %.1f, want %.1f\n", *base, 3.0 * n);
    }
    if (rank == 0) {
        printf("acc_rate: accumulate %.3f us, fetch_and_op %.3f us, get_accumulate %.3f us (%d each)\n",
               t_acc * 1e6, t_fop * 1e6, t_gacc * 1e6, n);
    }
    MPI_Win_free(&win);
    free(base);
    MPI_Finalize();
    return bad;
}
