/*
 * The postbox ring of btl_rsm without MPI: how fast a sender can stream messages
 * to a receiver on another core, as a function of the ring's length.
 *
 * Two processes share an anonymous mapping: a ring of 64-byte slots (a message is
 * a group of slots, its head's first word the flag seq + 1, stored last with
 * release), and one ack byte per slot that the receiver writes after copying a
 * message out (its lap, as rsm does).  The sender waits for the ack of a slot
 * one lap back before it rewrites it, sends WINDOW messages from WINDOW distinct
 * buffers, then waits for the receiver to say it has the window (as xb-bw and
 * OSU's bandwidth test do).  The receiver copies each message into a buffer of
 * its own; the last window's bytes are checked at the end.  SEND_WORK and
 * RECV_WORK are empty loop turns per message on either side, standing in for
 * what MPI does around each one (ob1's request and matching): with none, the
 * ring length matters little here; with ~100 on either side, it does.
 *
 *   cc -O2 -o ring_knee ring_knee.c
 *   ./ring_knee SLOTS WINDOW SIZE WINDOWS [SEND_WORK RECV_WORK [SENDER_CPU RECEIVER_CPU]]
 *   for s in 2048 2560 3072 4096; do ./ring_knee $s 64 1024 20000 0 100; done
 *
 * SLOTS need not be a power of two (positions are taken modulo it).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct slot {
    _Atomic uint32_t flag;
    uint32_t len;
    unsigned char data[56];    /* a group's payload runs on through the next slots */
} slot_t;

typedef struct shared {
    _Atomic uint64_t windows_received;
    unsigned char pad[56];
    _Atomic uint8_t acks[];    /* one per slot */
} shared_t;

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
    }
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + (double) t.tv_nsec * 1e-9;
}

/* per-message work that the compiler keeps: an empty loop over a volatile counter */
static void work(unsigned turns)
{
    for (volatile unsigned i = 0; i < turns; i++) {
    }
}

static uint8_t lap_tag(uint64_t seq, uint32_t slots) { return (uint8_t) ((seq / slots) & 0x7f) + 1; }

static unsigned char pattern(uint32_t window_slot, size_t byte) { return (unsigned char) (window_slot * 31 + byte * 7 + 1); }

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s SLOTS WINDOW SIZE WINDOWS [SEND_WORK RECV_WORK [SENDER_CPU RECEIVER_CPU]]\n",
                argv[0]);
        return 2;
    }
    const uint32_t slots = (uint32_t) atoi(argv[1]), window = (uint32_t) atoi(argv[2]);
    const uint32_t size = (uint32_t) atoi(argv[3]), windows = (uint32_t) atoi(argv[4]);
    const unsigned send_work = argc > 6 ? (unsigned) atoi(argv[5]) : 0;
    const unsigned recv_work = argc > 6 ? (unsigned) atoi(argv[6]) : 0;
    const int send_cpu = argc > 8 ? atoi(argv[7]) : 0, recv_cpu = argc > 8 ? atoi(argv[8]) : 1;
    const uint32_t group = 1 + (size > 56 ? (size - 56 + 63) / 64 : 0);
    if (slots < 2 * group || window == 0 || windows == 0) {
        fprintf(stderr, "a ring of %u slots cannot carry groups of %u\n", slots, group);
        return 2;
    }
    slot_t *ring = mmap(NULL, (size_t) slots * 64, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    shared_t *sh = mmap(NULL, sizeof *sh + slots, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    unsigned char *buf = aligned_alloc(64, (size_t) window * size);
    if (ring == MAP_FAILED || sh == MAP_FAILED || buf == NULL) {
        perror("memory");
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {            /* the receiver */
        pin(recv_cpu);
        memset(buf, 0, (size_t) window * size);
        uint64_t head = 0;
        for (uint32_t w = 0; w < windows; w++) {
            for (uint32_t j = 0; j < window; j++) {
                uint32_t at = (uint32_t) (head % slots);
                if (at + group > slots) {            /* a group never wraps: the sender skipped */
                    head += slots - at;
                    at = 0;
                }
                while (atomic_load_explicit(&ring[at].flag, memory_order_acquire) != (uint32_t) (head + 1)) {
                }
                memcpy(buf + (size_t) j * size, ring[at].data, size);
                work(recv_work);
                atomic_thread_fence(memory_order_release);
                for (uint32_t k = 0; k < group; k++) {
                    atomic_store_explicit(&sh->acks[(at + k) % slots], lap_tag(head + k, slots),
                                          memory_order_relaxed);
                }
                head += group;
            }
            atomic_store_explicit(&sh->windows_received, w + 1, memory_order_release);
        }
        for (uint32_t j = 0; j < window; j++) {
            for (size_t b = 0; b < size; b++) {
                if (buf[(size_t) j * size + b] != pattern(j, b)) {
                    fprintf(stderr, "message %u of the last window: byte %zu is wrong\n", j, b);
                    _exit(1);
                }
            }
        }
        _exit(0);
    }
    pin(send_cpu);
    for (uint32_t j = 0; j < window; j++) {
        for (size_t b = 0; b < size; b++) {
            buf[(size_t) j * size + b] = pattern(j, b);
        }
    }
    uint64_t tail = 0;
    const double t0 = now();
    for (uint32_t w = 0; w < windows; w++) {
        for (uint32_t j = 0; j < window; j++) {
            uint32_t at = (uint32_t) (tail % slots);
            if (at + group > slots) {
                tail += slots - at;
                at = 0;
            }
            if (tail + group > slots) {              /* the group's last slot, one lap back, acked */
                const uint64_t old = tail + group - 1 - slots;
                while (atomic_load_explicit(&sh->acks[old % slots], memory_order_acquire) != lap_tag(old, slots)) {
                }
            }
            work(send_work);
            memcpy(ring[at].data, buf + (size_t) j * size, size);
            ring[at].len = size;
            atomic_store_explicit(&ring[at].flag, (uint32_t) (tail + 1), memory_order_release);
            tail += group;
        }
        while (atomic_load_explicit(&sh->windows_received, memory_order_acquire) != w + 1) {
        }
    }
    const double t = now() - t0;
    int status = 1;
    waitpid(pid, &status, 0);
    const double msgs = (double) windows * window;
    printf("ring %6u slots (%5u KiB)  window %4u x %6u B  work %u/%u: %6.2f M messages/s %7.0f MB/s%s\n",
           slots, slots * 64 / 1024, window, size, send_work, recv_work, msgs / t / 1e6, msgs * size / t / 1e6,
           WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "" : "  BYTES WRONG");
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
