#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
int main(int c, char **v){ size_t n = atoi(v[1])*1024; int reps = 200000000/ n; char *a=malloc(n), *b=malloc(n); memset(a,1,n); memset(b,2,n);
 struct timespec t0,t1; clock_gettime(CLOCK_MONOTONIC,&t0); for(int i=0;i<reps;i++){ memcpy(b,a,n); __asm__ volatile("" ::: "memory"); a[i%n]++; }
 clock_gettime(CLOCK_MONOTONIC,&t1); double s=(t1.tv_sec-t0.tv_sec)+(t1.tv_nsec-t0.tv_nsec)*1e-9; printf("%s KiB: %.1f GB/s\n", v[1], (double)n*reps/s/1e9); return 0; }
