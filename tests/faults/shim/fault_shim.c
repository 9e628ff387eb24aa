/* An LD_PRELOAD shim for disk-fault tests: makes fsync/fdatasync fail with EIO or stall, and
 * write/pwrite fail with ENOSPC, for files under a path prefix.
 *
 * Controlled by the file named in $SLUICE_FAULT_CONTROL, re-read whenever it changes (its
 * mtime, size or inode, checked on each intercepted call; no signal is used, so the process
 * under test keeps its own). Write it with a rename so a reader never sees half a file. One
 * directive per line:
 *
 *   prefix /abs/path     faults apply to files whose path starts with this (required)
 *   fsync eio            every fsync/fdatasync fails with EIO (nothing is synced)
 *   fsync eio once       only the next one does
 *   fsync stall MS       each one sleeps MS milliseconds first, then syncs
 *   fsync hold           each one waits until the control file no longer says "hold"
 *   write enospc         every write/pwrite fails with ENOSPC (nothing is written)
 *
 * An empty file (or one without a prefix) injects nothing. Each injected fault is appended to
 * "$SLUICE_FAULT_CONTROL.log" as one line ("eio PATH", "enospc PATH", "held PATH",
 * "released PATH"), so a test can wait for a fault to be in effect instead of guessing.
 *
 * Built by CMake as sluice_fault_shim (only with SLUICE_TESTS); C, dlsym(RTLD_NEXT).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

enum fsync_mode { fsync_none, fsync_eio, fsync_eio_once, fsync_stall, fsync_hold };

struct control {
    char prefix[4096];
    size_t prefix_len;
    enum fsync_mode fsync;
    long stall_ms;
    int write_enospc;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct control current;
static struct stat seen;
static int seen_valid;
static __thread int inside; /* our own calls are never intercepted */

static ssize_t (*real_write)(int, const void*, size_t);
static ssize_t (*real_pwrite)(int, const void*, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void*, size_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);

static void resolve(void) {
    if (!real_write) {
        real_write = (ssize_t(*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
        real_pwrite = (ssize_t(*)(int, const void*, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
        real_pwrite64 =
            (ssize_t(*)(int, const void*, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
        real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
        real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    }
}

static void parse(const char* path, struct control* c) {
    memset(c, 0, sizeof *c);
    FILE* f = fopen(path, "r");
    if (!f) {
        return;
    }
    char line[4200];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (strncmp(line, "prefix ", 7) == 0) {
            size_t n = strlen(line + 7);
            if (n >= sizeof c->prefix) {
                n = sizeof c->prefix - 1;
            }
            memcpy(c->prefix, line + 7, n);
            c->prefix[n] = 0;
            c->prefix_len = n;
        } else if (strcmp(line, "fsync eio") == 0) {
            c->fsync = fsync_eio;
        } else if (strcmp(line, "fsync eio once") == 0) {
            c->fsync = fsync_eio_once;
        } else if (strncmp(line, "fsync stall ", 12) == 0) {
            c->fsync = fsync_stall;
            c->stall_ms = atol(line + 12);
        } else if (strcmp(line, "fsync hold") == 0) {
            c->fsync = fsync_hold;
        } else if (strcmp(line, "write enospc") == 0) {
            c->write_enospc = 1;
        }
    }
    fclose(f);
}

/* The current control (copied out), re-read if the file changed. */
static struct control load(void) {
    struct control c;
    const char* path = getenv("SLUICE_FAULT_CONTROL");
    pthread_mutex_lock(&mu);
    if (path) {
        struct stat st;
        int exists = stat(path, &st) == 0;
        if (!exists) {
            memset(&current, 0, sizeof current);
            seen_valid = 0;
        } else if (!seen_valid || st.st_ino != seen.st_ino || st.st_size != seen.st_size ||
                   st.st_mtim.tv_sec != seen.st_mtim.tv_sec ||
                   st.st_mtim.tv_nsec != seen.st_mtim.tv_nsec) {
            parse(path, &current);
            seen = st;
            seen_valid = 1;
        }
    }
    c = current;
    pthread_mutex_unlock(&mu);
    return c;
}

static void consume_once(void) {
    pthread_mutex_lock(&mu);
    if (current.fsync == fsync_eio_once) {
        current.fsync = fsync_none;
    }
    pthread_mutex_unlock(&mu);
}

/* Whether fd names a file under the prefix; its path goes to out. */
static int matches(int fd, const struct control* c, char* out, size_t n) {
    if (c->prefix_len == 0) {
        return 0;
    }
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, out, n - 1);
    if (len <= 0) {
        return 0;
    }
    out[len] = 0;
    return strncmp(out, c->prefix, c->prefix_len) == 0;
}

static void note(const char* what, const char* path) {
    const char* control = getenv("SLUICE_FAULT_CONTROL");
    if (!control) {
        return;
    }
    char name[4200];
    snprintf(name, sizeof name, "%s.log", control);
    int fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        return;
    }
    char line[4300];
    int len = snprintf(line, sizeof line, "%s %s\n", what, path);
    if (len > 0) {
        (void)real_write(fd, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
    }
    close(fd);
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* 0: go on with the real call; -1: fail it (errno set). */
static int before_sync(int fd) {
    if (inside) {
        return 0;
    }
    inside = 1;
    struct control c = load();
    char path[4096];
    int rc = 0;
    if (c.fsync != fsync_none && matches(fd, &c, path, sizeof path)) {
        if (c.fsync == fsync_eio || c.fsync == fsync_eio_once) {
            if (c.fsync == fsync_eio_once) {
                consume_once();
            }
            note("eio", path);
            errno = EIO;
            rc = -1;
        } else if (c.fsync == fsync_stall) {
            note("stalled", path);
            sleep_ms(c.stall_ms);
        } else if (c.fsync == fsync_hold) {
            note("held", path);
            while (load().fsync == fsync_hold) {
                sleep_ms(10);
            }
            note("released", path);
        }
    }
    inside = 0;
    return rc;
}

static int before_write(int fd) {
    if (inside) {
        return 0;
    }
    inside = 1;
    struct control c = load();
    char path[4096];
    int rc = 0;
    if (c.write_enospc && matches(fd, &c, path, sizeof path)) {
        note("enospc", path);
        errno = ENOSPC;
        rc = -1;
    }
    inside = 0;
    return rc;
}

int fsync(int fd) {
    resolve();
    if (before_sync(fd) != 0) {
        return -1;
    }
    return real_fsync(fd);
}

int fdatasync(int fd) {
    resolve();
    if (before_sync(fd) != 0) {
        return -1;
    }
    return real_fdatasync(fd);
}

ssize_t write(int fd, const void* buf, size_t n) {
    resolve();
    if (fd > 2 && before_write(fd) != 0) {
        return -1;
    }
    return real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t pos) {
    resolve();
    if (before_write(fd) != 0) {
        return -1;
    }
    return real_pwrite(fd, buf, n, pos);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off_t pos) {
    resolve();
    if (before_write(fd) != 0) {
        return -1;
    }
    return real_pwrite64(fd, buf, n, pos);
}
