/*
 * PID 1 of the QEMU guests the tests boot on Debian's own kernel (test/guest/guest_lib.sh):
 * load the modules packed beside it (/modules/order: virtio and 9p), mount the host's
 * root read-only over 9p, cached (cache=loose: every rank maps the same libraries, and
 * with cache=none each of them read them all over 9p again - a 2-rank mpirun of
 * /bin/true took 7.5 s instead of 2.5 s; the tests change nothing there while a guest
 * runs), give it fresh /proc, /sys, /dev, /dev/shm and /run (not /tmp:
 * the checkout may live there; guest scripts work in /run), chroot, run the script named
 * on the kernel command line (after "--") under bash, print "xbguest-exit STATUS" and
 * power off.  Orphans of the script (daemons, namespace holders) are reaped while it
 * runs.  Static, so the initramfs needs nothing else.
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

static void finish(int status)
{
    printf("xbguest-exit %d\n", status);
    fflush(stdout);
    sync();
    reboot(RB_POWER_OFF);
    _exit(status);
}

static void must(int rc, const char *what)
{
    if (rc != 0) {
        perror(what);
        finish(99);
    }
}

static void load_modules(void)
{
    FILE *order = fopen("/modules/order", "r");
    char mod[256], path[300];

    while (order && fgets(mod, sizeof(mod), order)) {
        mod[strcspn(mod, "\n")] = '\0';
        snprintf(path, sizeof(path), "/modules/%s", mod);
        int m = open(path, O_RDONLY);
        if (m < 0 || syscall(SYS_finit_module, m, "", 0) != 0)
            printf("guest_init: module %s not loaded\n", mod);
        if (m >= 0)
            close(m);
    }
    if (order)
        fclose(order);
}

int main(int argc, char **argv)
{
    mkdir("/dev", 0755);
    mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
    int fd = open("/dev/console", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0), dup2(fd, 1), dup2(fd, 2);
    }
    load_modules();
    mkdir("/newroot", 0755);
    must(mount("hostroot", "/newroot", "9p", MS_RDONLY,
               "trans=virtio,version=9p2000.L,msize=512000,cache=loose"), "mount 9p root");
    must(mount("proc", "/newroot/proc", "proc", 0, NULL), "mount proc");
    must(mount("sysfs", "/newroot/sys", "sysfs", 0, NULL), "mount sysfs");
    must(mount("devtmpfs", "/newroot/dev", "devtmpfs", 0, NULL), "mount dev");
    mkdir("/newroot/dev/shm", 01777);
    must(mount("tmpfs", "/newroot/dev/shm", "tmpfs", 0, "mode=1777"), "mount /dev/shm");
    must(mount("tmpfs", "/newroot/run", "tmpfs", 0, "mode=755"), "mount /run");
    must(chroot("/newroot"), "chroot");
    must(chdir("/"), "chdir");
    printf("guest_init: root mounted\n");
    fflush(stdout);
    int status = 99;
    if (argc > 1) {
        pid_t pid = fork();
        if (pid == 0) {
            argv[0] = "bash";   /* bash SCRIPT ARGS...: everything after "--" on the command line */
            execv("/bin/bash", argv);
            _exit(127);
        }
        for (;;) {               /* PID 1: every orphan ends up here */
            int st;
            pid_t done = waitpid(-1, &st, 0);
            if (done == pid) {
                status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                break;
            }
            if (done < 0)
                break;
        }
    }
    finish(status);
    return 0;
}
