/*
 * PID 1 of the two-node QEMU guest that t-rsm-numa.sh boots (Debian's own kernel):
 * load the virtio and 9p modules packed beside it, mount the host's root read-only
 * over 9p, give it fresh /proc, /sys, /dev, /dev/shm and /run (not /tmp: the checkout
 * may live there; the script works in /run), chroot, run the
 * script named on the kernel command line (after "--"), print its exit status and
 * power off.  Static, so the initramfs needs nothing else.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const char *what) { printf("numa_init: %s\n", what); fflush(stdout); }

static void must(int rc, const char *what)
{
    if (rc != 0) {
        perror(what);
        printf("xbnuma-exit 99\n");
        fflush(stdout);
        sync();
        reboot(RB_POWER_OFF);
    }
}

int main(int argc, char **argv)
{
    mkdir("/dev", 0755);
    mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
    int fd = open("/dev/console", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0), dup2(fd, 1), dup2(fd, 2);
    }
    FILE *order = fopen("/modules/order", "r");
    char mod[256];
    while (order && fgets(mod, sizeof(mod), order)) {
        mod[strcspn(mod, "\n")] = '\0';
        char path[300];
        snprintf(path, sizeof(path), "/modules/%s", mod);
        int m = open(path, O_RDONLY);
        if (m < 0 || syscall(SYS_finit_module, m, "", 0) != 0) {
            printf("numa_init: module %s not loaded\n", mod);
        }
        if (m >= 0) close(m);
    }
    mkdir("/newroot", 0755);
    must(mount("hostroot", "/newroot", "9p", MS_RDONLY,
               "trans=virtio,version=9p2000.L,msize=512000,cache=none"), "mount 9p root");
    must(mount("proc", "/newroot/proc", "proc", 0, NULL), "mount proc");
    must(mount("sysfs", "/newroot/sys", "sysfs", 0, NULL), "mount sysfs");
    must(mount("devtmpfs", "/newroot/dev", "devtmpfs", 0, NULL), "mount dev");
    mkdir("/newroot/dev/shm", 01777);
    must(mount("tmpfs", "/newroot/dev/shm", "tmpfs", 0, "mode=1777"), "mount /dev/shm");
    must(mount("tmpfs", "/newroot/run", "tmpfs", 0, "mode=755"), "mount /run");
    must(chroot("/newroot"), "chroot");
    must(chdir("/"), "chdir");
    say("root mounted");
    int status = 99;
    if (argc > 1) {
        pid_t pid = fork();
        if (pid == 0) {
            argv[0] = "bash";   /* bash SCRIPT ARGS...: everything after "--" on the command line */
            execv("/bin/bash", argv);
            _exit(127);
        }
        while (waitpid(pid, &status, 0) < 0) {
        }
        status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    }
    printf("xbnuma-exit %d\n", status);
    fflush(stdout);
    sync();
    reboot(RB_POWER_OFF);
    return 0;
}
