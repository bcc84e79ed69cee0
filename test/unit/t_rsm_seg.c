/* shm segment transport: 0600, unguessable names, import checks, write/barrier, no leftovers;
 * the sweep of segments whose owner died (a free lock, or an area whose control segment is gone)
 * that spares living and new ones and verbs pools;
 * reserving a segment's memory, and the error (not SIGBUS) when /dev/shm has no room. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rsm_seg.h"
#include "tap.h"

/* A file DIR/rsm-TAG-WHAT of 4 KiB, MAGIC in its first 8 bytes unless 0 */
static bool plant(const char *dir, const char *tag, const char *what, uint64_t magic)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/rsm-%s-%s", dir, tag, what);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    bool ok = fd >= 0 && ftruncate(fd, 4096) == 0
              && (magic == 0 || pwrite(fd, &magic, sizeof(magic), 0) == (ssize_t) sizeof(magic));
    if (fd >= 0) close(fd);
    return ok;
}

static bool present(const char *dir, const char *tag, const char *what)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/rsm-%s-%s", dir, tag, what);
    return access(path, F_OK) == 0;
}

/* The sweep, in a directory of its own (a user's real leftovers in /dev/shm
 * would count too), with a magic of its own: DEAD (magic, nobody holds it)
 * with two areas; LIVE (magic, a child holds its lock) with an area; NEW (no
 * magic yet: being created) with an area; ORPHAN, two areas whose owner's
 * control segment is gone; POOL, a verbs pool, whose tag is a sender's on
 * another host (no control segment here, and none to be); and names that only
 * look like areas. */
static void sweep_tests(void)
{
    const uint64_t magic = 0x5445535453574550ull;       /* "TESTSWEP" */
    char dir[] = "/tmp/t_rsm_seg.XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "sweep: a directory of its own");
    enum { DEAD, LIVE, NEW, ORPHAN, POOL, NT };
    char t[NT][33];
    for (int i = 0; i < NT; i++) rsm_seg_random_tag(t[i]);
    bool planted = true;
    planted &= plant(dir, t[DEAD], "ctl", magic);
    planted &= plant(dir, t[DEAD], "a0s0", 0);
    planted &= plant(dir, t[DEAD], "a1s0", 0);
    planted &= plant(dir, t[LIVE], "ctl", magic);
    planted &= plant(dir, t[LIVE], "a0s0", 0);
    planted &= plant(dir, t[NEW], "ctl", 0);
    planted &= plant(dir, t[NEW], "a0s0", 0);
    planted &= plant(dir, t[ORPHAN], "a0s0", 0);
    planted &= plant(dir, t[ORPHAN], "a0s12", 0);
    planted &= plant(dir, t[ORPHAN], "a0s", 0);            /* not an area's name */
    planted &= plant(dir, t[ORPHAN], "a0s0x", 0);          /* nor this */
    planted &= plant(dir, t[POOL], "vp0", 0);
    CHECK(planted, "sweep: 12 files planted");

    int pipefd[2], status;
    CHECK(pipe(pipefd) == 0, "pipe");
    pid_t holder = fork();
    if (holder == 0) {
        char path[256];
        snprintf(path, sizeof(path), "%s/rsm-%s-ctl", dir, t[LIVE]);
        int fd = open(path, O_RDONLY);
        if (fd < 0 || flock(fd, LOCK_SH) != 0) _exit(2);
        if (write(pipefd[1], "h", 1) != 1) _exit(3);
        for (;;) pause();                       /* until killed */
    }
    close(pipefd[1]);                           /* a child that failed: read returns 0 */
    char c = 0;
    CHECK(read(pipefd[0], &c, 1) == 1 && c == 'h', "sweep: a child holds the living owner's lock");
    close(pipefd[0]);

    int removed = rsm_shm_sweep(dir, magic);
    CHECK(removed == 5, "sweep: removed 5 names (got %d)", removed);
    CHECK(!present(dir, t[DEAD], "ctl") && !present(dir, t[DEAD], "a0s0") && !present(dir, t[DEAD], "a1s0"),
          "sweep: the dead owner's control segment and areas removed");
    CHECK(!present(dir, t[ORPHAN], "a0s0") && !present(dir, t[ORPHAN], "a0s12"),
          "sweep: areas whose control segment is gone removed");
    CHECK(present(dir, t[ORPHAN], "a0s") && present(dir, t[ORPHAN], "a0s0x"),
          "sweep: names that only look like areas kept");
    CHECK(present(dir, t[POOL], "vp0"), "sweep: a verbs pool (a remote sender's tag) kept");
    CHECK(present(dir, t[LIVE], "ctl") && present(dir, t[LIVE], "a0s0"),
          "sweep: the living owner's segments kept");
    CHECK(present(dir, t[NEW], "ctl") && present(dir, t[NEW], "a0s0"),
          "sweep: a segment without its magic yet (being created) and its area kept");
    CHECK(rsm_shm_sweep(dir, magic ^ 1) == 0 && present(dir, t[LIVE], "ctl"),
          "sweep: another magic touches nothing");
    kill(holder, SIGKILL);
    waitpid(holder, &status, 0);
    removed = rsm_shm_sweep(dir, magic);
    CHECK(removed == 2 && !present(dir, t[LIVE], "ctl") && !present(dir, t[LIVE], "a0s0"),
          "sweep: once its holder died, that one too (%d)", removed);
    CHECK(present(dir, t[NEW], "ctl"), "sweep: the new one still kept");
    CHECK(rsm_shm_sweep("/nonexistent-dir", magic) == 0, "sweep: an unreadable directory is no error");

    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "sweep: test directory removed");
}

int main(void)
{
    char tag[33], tag2[33], name[RSM_SEG_NAME_MAX], path[128];
    CHECK(rsm_seg_random_tag(tag) == 0 && strlen(tag) == 32, "random tag: %s", tag);
    CHECK(rsm_seg_random_tag(tag2) == 0 && strcmp(tag, tag2) != 0, "two tags differ");
    snprintf(name, sizeof(name), "/rsm-%s-unit", tag);
    snprintf(path, sizeof(path), "/dev/shm%s", name);

    rsm_seg_t ex = {0}, im = {0}, dup = {0}, small = {0};
    CHECK(rsm_seg_shm_ops.seg_export(&ex, name, 65536, 0) == 0 && ex.direct, "export 64 KiB");
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "created mode 0600 (%o)",
          st.st_mode & 0777);
    CHECK(rsm_seg_shm_ops.seg_export(&dup, name, 4096, -1) == -EEXIST, "a second export of the name fails");
    CHECK(rsm_seg_shm_ops.seg_import(&small, name, 65536 * 2) != 0, "import larger than the segment refused");
    CHECK(rsm_seg_shm_ops.seg_import(&im, "/rsm-nonexistent", 4096) == -ENOENT, "import of a missing name fails");

    pid_t pid = fork();
    if (pid == 0) {     /* a peer: import, write, barrier */
        rsm_seg_t s = {0};
        if (rsm_seg_shm_ops.seg_import(&s, name, 65536) != 0) _exit(2);
        rsm_seg_write(&s, 4096, "remote write", 13);
        rsm_seg_barrier(&s);
        s.ops->seg_release(&s);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0
          && strcmp((char *) ex.base + 4096, "remote write") == 0, "a peer's write arrives");

    ex.ops->seg_unlink(&ex);
    CHECK(access(path, F_OK) != 0, "unlink removes the name");
    CHECK(((char *) ex.base)[4096] == 'r', "the mapping outlives the name");
    ex.ops->seg_release(&ex);

    rsm_seg_t ex2 = {0};
    CHECK(rsm_seg_shm_ops.seg_export(&ex2, name, 4096, -1) == 0, "re-export");
    ex2.ops->seg_release(&ex2);
    CHECK(access(path, F_OK) != 0, "release of an exported segment removes its name");
    CHECK(rsm_seg_shm_ops.seg_export(&ex2, "no-slash", 4096, -1) == -EINVAL, "bad names refused");

    /* Reserving memory: a fresh segment is a sparse file; rsm_seg_reserve gives the
     * range its pages, checks the range, and does nothing for a segment we imported. */
    rsm_seg_t rs = {0}, ri = {0};
    CHECK(rsm_seg_shm_ops.seg_export(&rs, name, 1 << 20, -1) == 0, "reserve: export 1 MiB");
    CHECK(stat(path, &st) == 0 && st.st_blocks == 0, "reserve: the new segment is sparse (%ld blocks)",
          (long) st.st_blocks);
    CHECK(rsm_seg_reserve(&rs, 4096, 65536) == 0 && stat(path, &st) == 0 && st.st_blocks * 512 >= 65536
          && st.st_blocks * 512 < (1 << 20), "reserve: 64 KiB of it get their pages (%ld bytes)",
          (long) st.st_blocks * 512);
    CHECK(rsm_seg_reserve(&rs, (1 << 20) - 4096, 8192) == -EINVAL
          && rsm_seg_reserve(&rs, (size_t) 2 << 20, 1) == -EINVAL, "reserve: a range past the end refused");
    CHECK(rsm_seg_shm_ops.seg_import(&ri, name, 1 << 20) == 0 && rsm_seg_reserve(&ri, 0, 1 << 20) == 0
          && stat(path, &st) == 0 && st.st_blocks * 512 < (1 << 20), "reserve: an imported segment is left alone");
    CHECK(rs.fd >= 0 && rsm_seg_reserve(&rs, 0, 1 << 20) == 0 && rs.fd == -1
          && rsm_seg_reserve(&rs, 0, 4096) == 0 && stat(path, &st) == 0 && st.st_blocks * 512 >= (1 << 20),
          "reserve: the whole segment reserved, its descriptor is closed (nothing left to reserve)");
    ri.ops->seg_release(&ri);
    rs.ops->seg_release(&rs);
    CHECK(rsm_shm_total_bytes() > 0 && rsm_shm_free_bytes() <= rsm_shm_total_bytes(),
          "/dev/shm: %zu bytes, %zu free", rsm_shm_total_bytes(), rsm_shm_free_bytes());
    /* A /dev/shm of 256 KiB (a mount namespace of the child's own; root only): a 1 MiB
     * segment is created (sparse), its reservation fails with ENOSPC instead of a later
     * store raising SIGBUS, and the sizes read back are the mount's. */
    pid = fork();
    if (pid == 0) {
        if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0
            || mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=256k,mode=1777") != 0) {
            _exit(77);
        }
        rsm_seg_t full = {0};
        if (rsm_seg_shm_ops.seg_export(&full, name, 1 << 20, -1) != 0) _exit(2);
        if (rsm_shm_total_bytes() != 256 * 1024) _exit(3);
        if (rsm_seg_reserve(&full, 0, 1 << 20) != -ENOSPC) _exit(4);
        if (rsm_seg_reserve(&full, 0, 64 * 1024) != 0) _exit(5);     /* what fits, fits */
        full.ops->seg_release(&full);
        _exit(0);
    }
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
        printf("ok %d - reserve: /dev/shm of 256 KiB # SKIP needs root to mount a tmpfs\n", ++tap_n);
    } else {
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "reserve: in a /dev/shm of 256 KiB, 1 MiB fails with ENOSPC, 64 KiB succeeds (child %d)",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }

    sweep_tests();
    return tap_done();
}
