#include <mpi.h>
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    double t0 = now();
    MPI_Init(&argc, &argv);
    double t1 = now();
    int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = now();
    MPI_Finalize();
    double t3 = now();
    printf("INIT rank %d init %.2f barrier %.2f finalize %.2f\n", r, t1 - t0, t2 - t1, t3 - t2);
    return 0;
}
