/* shm segment transport: 0600, unguessable names, import checks, write/barrier, no leftovers. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rsm_seg.h"
#include "tap.h"

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
    return tap_done();
}
