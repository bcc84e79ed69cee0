/* pmeth's kernel-side demultiplexing filter (pmeth_filter.h). */
#include "pmeth_filter.h"
#include "pmeth_wire.h"

#include <linux/filter.h>

/* what a classic BPF word load (big-endian) reads where pmeth stores VALUE
 * little-endian */
static uint32_t as_loaded(uint32_t value)
{
    uint8_t b[4];
    pmeth_put32(b, value);
    return (uint32_t) b[0] << 24 | (uint32_t) b[1] << 16 | (uint32_t) b[2] << 8 | b[3];
}

unsigned pmeth_filter_build(struct sock_filter *code, uint16_t ethertype, uint32_t job_key,
                            uint32_t dest_id, int ifindex)
{
    unsigned n = 0;
    /* each test falls through when it holds and jumps to the final "drop"
     * when not; the jumps are filled in once the length is known */
    if (ifindex > 0) {
        code[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                                  (uint32_t) (SKF_AD_OFF + SKF_AD_IFINDEX));
        code[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) ifindex, 0, 0);
    }
    code[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_H | BPF_ABS, PMETH_WIRE_OFF_ETHERTYPE);
    code[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ethertype, 0, 0);
    code[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, PMETH_WIRE_OFF_KEY);
    code[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, as_loaded(job_key), 0, 0);
    code[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, PMETH_WIRE_OFF_DST);
    code[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, as_loaded(dest_id), 0, 0);
    code[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, 0x40000);   /* the whole frame */
    code[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, 0);         /* drop */
    for (unsigned i = 0; i < n; i++) {
        if (BPF_CLASS(code[i].code) == BPF_JMP) {
            code[i].jf = (uint8_t) (n - 1 - (i + 1));
        }
    }
    return n;
}
