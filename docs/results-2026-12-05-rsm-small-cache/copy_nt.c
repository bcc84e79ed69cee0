#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <immintrin.h>
static void ntcopy(void *d, const void *s, size_t n){ __m128i *dd=d; const __m128i *ss=s; for(size_t i=0;i<n/16;i+=4){ __m128i a=_mm_loadu_si128(ss+i),b=_mm_loadu_si128(ss+i+1),c=_mm_loadu_si128(ss+i+2),e=_mm_loadu_si128(ss+i+3); _mm_stream_si128(dd+i,a);_mm_stream_si128(dd+i+1,b);_mm_stream_si128(dd+i+2,c);_mm_stream_si128(dd+i+3,e);} _mm_sfence(); }
int main(int c, char **v){ size_t n = atoi(v[1])*1024; size_t pool=4<<20; int reps = 400000000/ n; char *a=aligned_alloc(64,n), *b=aligned_alloc(64,pool); memset(a,1,n); memset(b,2,pool);
 for(int mode=0;mode<2;mode++){ struct timespec t0,t1; clock_gettime(CLOCK_MONOTONIC,&t0); size_t off=0; for(int i=0;i<reps;i++){ if(off+n>pool) off=0; if(mode) ntcopy(b+off,a,n); else memcpy(b+off,a,n); off+=n; __asm__ volatile("" ::: "memory"); }
 clock_gettime(CLOCK_MONOTONIC,&t1); double s=(t1.tv_sec-t0.tv_sec)+(t1.tv_nsec-t0.tv_nsec)*1e-9; printf("%s KiB %s: %.1f GB/s\n", v[1], mode?"nt    ":"memcpy", (double)n*reps/s/1e9);} return 0; }
