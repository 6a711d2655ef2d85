#include "ba_system.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int ba_sys_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

static volatile int ba_shutdown_fd = -1;

static void ba_shutdown_handler(int signo) {
    int saved = errno;
    unsigned char byte = (unsigned char)signo;
    if (ba_shutdown_fd >= 0) (void)!write(ba_shutdown_fd, &byte, 1);
    errno = saved;
}

int ba_sys_install_shutdown_signals(int write_fd) {
    int flags = fcntl(write_fd, F_GETFL);
    if (flags < 0 || fcntl(write_fd, F_SETFL, flags | O_NONBLOCK) != 0) return -1;
    ba_shutdown_fd = write_fd;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = ba_shutdown_handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (sigaction(SIGTERM, &action, NULL) != 0) return -1;
    if (sigaction(SIGINT, &action, NULL) != 0) return -1;
    return 0;
}

int ba_sys_socketpair_cloexec(int fds[2]) { return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds); }

int ba_sys_spawn(const char *path, char *const argv[], char *const envp[], int protocol_fd, int output_fd,
                 pid_t *pid_out) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    rc = posix_spawnattr_init(&attr);
    if (rc != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return rc;
    }
    // dup2 onto the same number keeps O_CLOEXEC, so both fds are first copied to numbers >= 10
    // (still O_CLOEXEC: nothing else spawned meanwhile inherits them); dup2 from there to 1, 2
    // and 3 always clears the flag in the child.
    int proto_high = fcntl(protocol_fd, F_DUPFD_CLOEXEC, 10);
    int out_high = fcntl(output_fd, F_DUPFD_CLOEXEC, 10);
    if (proto_high < 0 || out_high < 0) {
        rc = errno;
        goto done;
    }
    if ((rc = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)) != 0) goto done;
    if ((rc = posix_spawn_file_actions_adddup2(&actions, out_high, 1)) != 0) goto done;
    if ((rc = posix_spawn_file_actions_adddup2(&actions, out_high, 2)) != 0) goto done;
    if ((rc = posix_spawn_file_actions_adddup2(&actions, proto_high, 3)) != 0) goto done;
    // Nothing else of the parent reaches the child: not every descriptor of a host (basd's
    // listening socket, its clients' connections, its database) is O_CLOEXEC, and an extension
    // must not be able to accept or answer basd's connections (docs/threat-model.md).
    if ((rc = posix_spawn_file_actions_addclosefrom_np(&actions, 4)) != 0) goto done;

    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
    rc = posix_spawn(pid_out, path, &actions, &attr, argv, envp);
done:
    if (proto_high >= 0) close(proto_high);
    if (out_high >= 0) close(out_high);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    return rc;
}

/* The child's side of ba_sys_spawn_tied_to_parent: async-signal-safe calls only; never returns. */
static void become_tied_child(const char *path, char *const argv[], char *const envp[], int output_fd, int error_fd,
                              int death_signal, pid_t parent, int report_fd) {
    // Every signal is blocked (the parent blocked them around the fork). Until setpgid, this child is
    // still in the parent's process group: a Ctrl-C meant for the parent would be pending here, and
    // kill it the moment it unblocks. Ignoring a signal discards it while pending, so each is set
    // to SIG_IGN first, then to SIG_DFL.
    setpgid(0, 0);
    // The raw call, as posix_spawn's SETSIGDEF makes it: glibc's sigaction refuses its own signals
    // (32, 33), which are to be reset too. All zeros is SIG_DFL, no flags, an empty mask, whatever
    // the architecture's layout of the kernel's struct (64 bytes is more than any of them).
    unsigned char default_action[64], ignore_action[64];
    memset(default_action, 0, sizeof default_action);
    memset(ignore_action, 0, sizeof ignore_action);
    void (*ignore)(int) = SIG_IGN;
    memcpy(ignore_action, &ignore, sizeof ignore);  // the handler is the struct's first member
    // Fails harmlessly for SIGKILL and SIGSTOP.
    for (int number = 1; number < NSIG; number++) {
        (void)syscall(SYS_rt_sigaction, number, ignore_action, NULL, 8);
        (void)syscall(SYS_rt_sigaction, number, default_action, NULL, 8);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int error = 0;
    if (prctl(PR_SET_PDEATHSIG, death_signal) != 0) error = errno;
    // The parent died before the prctl: no signal will come, so do not start at all.
    if (error == 0 && getppid() != parent) _exit(127);
    // Copies above 9 first, so that a dup2 into 0-3 never overwrites a descriptor still to be copied.
    // `report` is where an error goes: the pipe's end wherever it is now.
    int report = report_fd, out = -1, err = -1, null = -1;
    if (!error && ((report = fcntl(report_fd, F_DUPFD_CLOEXEC, 10)) < 0)) report = report_fd, error = errno;
    if (!error && ((out = fcntl(output_fd, F_DUPFD, 10)) < 0 || (err = fcntl(error_fd, F_DUPFD, 10)) < 0))
        error = errno;
    if (!error && (null = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) error = errno;
    if (!error && (dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)) error = errno;
    if (!error && dup3(report, 3, O_CLOEXEC) < 0) error = errno;
    if (!error) {
        report = 3;
        closefrom(4);
        execve(path, argv, envp);
        error = errno;
    }
    ssize_t ignored = write(report, &error, sizeof error);
    (void)ignored;
    _exit(127);
}

int ba_sys_spawn_tied_to_parent(const char *path, char *const argv[], char *const envp[], int output_fd,
                                int error_fd, int death_signal, pid_t *pid_out) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return errno;
    pid_t parent = getpid();
    // The child starts with every signal blocked, so none arrives before it has left this process
    // group and reset its signals (become_tied_child); this thread's mask is restored at once.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    // _Fork, not fork: no atfork handlers run in the child (libdispatch's would), and it is
    // async-signal-safe, which is all this multithreaded process may call in the child.
    pid_t pid = _Fork();
    if (pid == 0) become_tied_child(path, argv, envp, output_fd, error_fd, death_signal, parent, report[1]);
    int fork_error = pid < 0 ? errno : 0;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (pid < 0) {
        close(report[0]);
        close(report[1]);
        return fork_error;
    }
    close(report[1]);
    int error = 0;
    ssize_t n;
    do {
        n = read(report[0], &error, sizeof error);
    } while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == (ssize_t)sizeof error) {
        // exec failed: the child exits 127 at once; reap it so it leaves no zombie.
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
        return error ? error : ECHILD;
    }
    *pid_out = pid;
    return 0;
}

int ba_sys_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

int ba_sys_set_data_limit(uint64_t bytes) {
    struct rlimit limit = {.rlim_cur = (rlim_t)bytes, .rlim_max = (rlim_t)bytes};
    return setrlimit(RLIMIT_DATA, &limit);
}

int64_t ba_sys_proc_status_bytes(const char *key) {
    char buffer[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t used = 0;
    for (;;) {
        ssize_t n = read(fd, buffer + used, sizeof(buffer) - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        used += (size_t)n;
        if (used == sizeof(buffer) - 1) break;
    }
    close(fd);
    buffer[used] = 0;
    size_t key_length = strlen(key);
    for (char *line = buffer; line && *line;) {
        if (strncmp(line, key, key_length) == 0 && line[key_length] == ':') {
            int64_t value = 0;
            for (char *p = line + key_length + 1; *p && *p != '\n'; p++) {
                if (*p >= '0' && *p <= '9') value = value * 10 + (*p - '0');
            }
            return value * 1024;
        }
        line = strchr(line, '\n');
        if (line) line++;
    }
    return -1;
}

static uint64_t crash_memory_limit;

static size_t format_u64(char *out, uint64_t value) {
    char digits[24];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value && n < sizeof(digits));
    for (size_t i = 0; i < n; i++) out[i] = digits[n - 1 - i];
    return n;
}

static void crash_reporter(int signal_number) {
    // Only async-signal-safe calls: open/read/write/close, then re-raise with the default action.
    int saved_errno = errno;
    char line[160];
    size_t n = 0;
    const char *prefix = "\n[ba-extension-runner] fatal signal=";
    memcpy(line, prefix, strlen(prefix));
    n += strlen(prefix);
    n += format_u64(line + n, (uint64_t)signal_number);
    const char *vmdata = " vmdata_bytes=";
    memcpy(line + n, vmdata, strlen(vmdata));
    n += strlen(vmdata);
    int64_t data = ba_sys_proc_status_bytes("VmData");
    n += format_u64(line + n, data < 0 ? 0 : (uint64_t)data);
    const char *limit = " limit_bytes=";
    memcpy(line + n, limit, strlen(limit));
    n += strlen(limit);
    n += format_u64(line + n, crash_memory_limit);
    line[n++] = '\n';
    (void)ba_sys_write_all(2, line, n);
    signal(signal_number, SIG_DFL);
    errno = saved_errno;
    raise(signal_number);
}

int ba_sys_install_crash_reporter(uint64_t memory_limit_bytes) {
    crash_memory_limit = memory_limit_bytes;
    // A stack overflow or an allocation failure must still be able to run the handler.
    static char alternate_stack[64 * 1024];
    stack_t stack = {.ss_sp = alternate_stack, .ss_size = sizeof(alternate_stack), .ss_flags = 0};
    if (sigaltstack(&stack, NULL) != 0) return -1;
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = crash_reporter;
    action.sa_flags = SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    const int signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    }
    return 0;
}

static int signal_pipe[2] = {-1, -1};

static void write_signal_number(int number) {
    int saved = errno;
    unsigned char byte = (unsigned char)number;
    // Non-blocking: with the pipe full, a signal is dropped rather than the handler blocked.
    ssize_t ignored = write(signal_pipe[1], &byte, 1);
    (void)ignored;
    errno = saved;
}

int ba_sys_signal_pipe(const int *signals, int count) {
    if (signal_pipe[0] < 0) {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0) return -1;
        int flags = fcntl(fds[1], F_GETFL);
        if (flags < 0 || fcntl(fds[1], F_SETFL, flags | O_NONBLOCK) != 0) {
            close(fds[0]);
            close(fds[1]);
            return -1;
        }
        signal_pipe[0] = fds[0];
        signal_pipe[1] = fds[1];
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = write_signal_number;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < count; i++) {
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    }
    return signal_pipe[0];
}

/* Writes everything, with send(2) and `flags` on sockets or write(2) otherwise. */
static int transfer_all(int fd, const void *bytes, size_t length, int use_send, int flags) {
    const char *p = bytes;
    while (length > 0) {
        ssize_t n = use_send ? send(fd, p, length, flags) : write(fd, p, length);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += n;
        length -= (size_t)n;
    }
    return 0;
}

int ba_sys_line_buffer_stdout(void) { return setvbuf(stdout, NULL, _IOLBF, 0); }

int ba_sys_write_all(int fd, const void *bytes, size_t length) { return transfer_all(fd, bytes, length, 0, 0); }

int ba_sys_send_all(int fd, const void *bytes, size_t length) { return transfer_all(fd, bytes, length, 1, MSG_NOSIGNAL); }

void ba_sys_start_writeback(int fd, int64_t offset, int64_t length) {
    (void)sync_file_range(fd, (off64_t)offset, (off64_t)length, SYNC_FILE_RANGE_WRITE);
}

int ba_sys_malloc_trim(void) { return malloc_trim(0); }

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

int ba_sys_rename_exchange(int old_dir, const char *old_name, int new_dir, const char *new_name) {
    return (int)syscall(SYS_renameat2, old_dir, old_name, new_dir, new_name, RENAME_EXCHANGE);
}
