// The call jail: what ba-extension-runner does first, single-threaded, before it says hello.
// See ba_system.h (ba_sys_enter_call_jail) and docs/threat-model.md.
#include "ba_system.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// ---- Landlock, spelled out here: the system's <linux/landlock.h> may predate ABI 4-6. ----------
struct ba_landlock_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;  // ABI 4
    uint64_t scoped;              // ABI 6
};
struct ba_landlock_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));
#define BA_LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#define BA_LANDLOCK_RULE_PATH_BENEATH 1
#define BA_LL_FS_EXECUTE (1ULL << 0)
#define BA_LL_FS_WRITE_FILE (1ULL << 1)
#define BA_LL_FS_READ_FILE (1ULL << 2)
#define BA_LL_FS_READ_DIR (1ULL << 3)
#define BA_LL_FS_TRUNCATE (1ULL << 14)  // ABI 3
#define BA_LL_FS_IOCTL_DEV (1ULL << 15) // ABI 5
#define BA_LL_NET_BIND_TCP (1ULL << 0)
#define BA_LL_NET_CONNECT_TCP (1ULL << 1)
#define BA_LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define BA_LL_SCOPE_SIGNAL (1ULL << 1)
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

static void say(char *message, size_t size, const char *format, ...) {
    if (message == NULL || size == 0) return;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(message, size, format, arguments);
    va_end(arguments);
}

int ba_sys_landlock_abi(void) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, BA_LANDLOCK_CREATE_RULESET_VERSION);
    return abi < 0 ? -1 : (int)abi;
}

static uint64_t landlock_fs_rights(int abi) {
    uint64_t rights = (1ULL << 13) - 1;  // ABI 1: EXECUTE … MAKE_SYM
    if (abi >= 2) rights |= 1ULL << 13;  // REFER
    if (abi >= 3) rights |= BA_LL_FS_TRUNCATE;
    if (abi >= 5) rights |= BA_LL_FS_IOCTL_DEV;
    return rights;
}

/* Adds one path: a directory gets `rights`, a file only the rights that apply to files. A path
   that does not exist is skipped (a system folder this distribution lacks, e.g. /lib32). */
static int landlock_allow(int ruleset, const char *path, uint64_t rights, int abi, char *message, size_t size) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat info;
    if (fstat(fd, &info) != 0) {
        close(fd);
        return 0;
    }
    if (!S_ISDIR(info.st_mode)) {
        uint64_t file_rights = BA_LL_FS_EXECUTE | BA_LL_FS_WRITE_FILE | BA_LL_FS_READ_FILE;
        if (abi >= 3) file_rights |= BA_LL_FS_TRUNCATE;
        if (abi >= 5) file_rights |= BA_LL_FS_IOCTL_DEV;
        rights &= file_rights;
    }
    struct ba_landlock_path_beneath_attr rule = {.allowed_access = rights, .parent_fd = fd};
    long rc = syscall(SYS_landlock_add_rule, ruleset, BA_LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
    int saved = errno;
    close(fd);
    if (rc != 0) {
        say(message, size, "Landlock: cannot add a rule for %s: %s", path, strerror(saved));
        return -1;
    }
    return 0;
}

/* Read-only: what loading needs. Read-write: the container and the private temporary folder. TCP
   bind and connect refused (ABI 4), signals and abstract unix sockets scoped to the call (ABI 6). */
static int apply_landlock(const ba_call_jail *jail, char *message, size_t size) {
    int abi = ba_sys_landlock_abi();
    if (abi < 1) {
        say(message, size, "Landlock is not available (%s): a kernel 5.13 or newer with lsm=landlock is needed",
            strerror(errno));
        return -1;
    }
    struct ba_landlock_ruleset_attr attributes = {.handled_access_fs = landlock_fs_rights(abi)};
    size_t attributes_size = sizeof(uint64_t);
    if (abi >= 4) {
        attributes.handled_access_net = BA_LL_NET_BIND_TCP | BA_LL_NET_CONNECT_TCP;
        attributes_size = 2 * sizeof(uint64_t);
    }
    if (abi >= 6) {
        attributes.scoped = BA_LL_SCOPE_ABSTRACT_UNIX_SOCKET | BA_LL_SCOPE_SIGNAL;
        attributes_size = 3 * sizeof(uint64_t);
    }
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attributes, attributes_size, 0);
    if (ruleset < 0) {
        say(message, size, "Landlock: cannot create a ruleset (ABI %d): %s", abi, strerror(errno));
        return -1;
    }
    uint64_t read_only = BA_LL_FS_EXECUTE | BA_LL_FS_READ_FILE | BA_LL_FS_READ_DIR;
    uint64_t read_write = landlock_fs_rights(abi);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < jail->read_count; i++)
        rc = landlock_allow(ruleset, jail->read_paths[i], read_only, abi, message, size);
    for (size_t i = 0; rc == 0 && i < jail->write_count; i++)
        rc = landlock_allow(ruleset, jail->write_paths[i], read_write, abi, message, size);
    // /dev/null is written to by much ordinary code; it stays read-write.
    if (rc == 0) rc = landlock_allow(ruleset, "/dev/null", BA_LL_FS_READ_FILE | BA_LL_FS_WRITE_FILE, abi, message, size);
    if (rc == 0 && syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
        say(message, size, "Landlock: landlock_restrict_self failed: %s", strerror(errno));
        rc = -1;
    }
    close(ruleset);
    return rc;
}

// ---- seccomp --------------------------------------------------------------------------------
#if defined(__x86_64__)
#define BA_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define BA_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#define BA_NS_FLAGS \
    (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP)

/* Refused with EPERM: what an extension never needs. socket(2) of any family (the runner's own
   socket to its host was made by the host); ptrace and the process_vm_* calls; mounts and
   namespaces; bpf, perf, keyrings, modules, kexec, io_uring, userfaultfd, handles. clone3 gets
   ENOSYS so that libc falls back to clone, whose flags can be checked: no new namespaces. */
static const int refused_calls[] = {
    SYS_socket, SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_mount, SYS_umount2,
    SYS_pivot_root, SYS_chroot, SYS_bpf, SYS_keyctl, SYS_add_key, SYS_request_key, SYS_unshare, SYS_setns,
    SYS_kexec_load, SYS_kexec_file_load, SYS_init_module, SYS_finit_module, SYS_delete_module,
    SYS_perf_event_open, SYS_userfaultfd, SYS_open_by_handle_at, SYS_name_to_handle_at, SYS_swapon, SYS_swapoff,
    SYS_reboot, SYS_acct, SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register, SYS_fsopen,
    SYS_fsconfig, SYS_fsmount, SYS_fspick, SYS_move_mount, SYS_open_tree, SYS_mount_setattr, SYS_quotactl,
    SYS_fanotify_init, SYS_pidfd_getfd,
};

static int apply_seccomp(char *message, size_t size) {
#ifndef BA_AUDIT_ARCH
    say(message, size, "seccomp: this architecture is not supported by the filter");
    return -1;
#else
    enum { refused = sizeof(refused_calls) / sizeof(refused_calls[0]) };
    struct sock_filter program[8 + 2 * refused + 8];
    size_t n = 0;
#define EMIT(statement) program[n++] = (struct sock_filter)statement
    EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
    EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, BA_AUDIT_ARCH, 1, 0));
    EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
    EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
#if defined(__x86_64__)
    // x32 system calls (numbers with bit 30 set) would bypass the checks below.
    EMIT(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1));
    EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
#endif
    for (size_t i = 0; i < refused; i++) {
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)refused_calls[i], 0, 1));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
    }
    EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1));
    EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS));
    // clone(flags, …): the low 32 bits of the first argument hold every namespace flag.
    EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3));
    EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])));
    EMIT(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, BA_NS_FLAGS, 0, 1));
    EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
    EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
#undef EMIT
    struct sock_fprog filter = {.len = (unsigned short)n, .filter = program};
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &filter) != 0) {
        say(message, size, "seccomp: the filter was refused: %s", strerror(errno));
        return -1;
    }
    return 0;
#endif
}

// ---- Namespaces and the process tree ------------------------------------------------------------

static int write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t length = (ssize_t)strlen(text);
    ssize_t written = write(fd, text, (size_t)length);
    int saved = errno;
    close(fd);
    errno = saved;
    return written == length ? 0 : -1;
}

/* Maps the caller's uid and gid to themselves inside its new user namespace, so files it creates
   keep their owner and permission checks read as before. */
static int map_ids(uid_t uid, gid_t gid, char *message, size_t size) {
    char line[64];
    if (write_file("/proc/self/setgroups", "deny") != 0 && errno != ENOENT) {
        say(message, size, "user namespace: cannot write /proc/self/setgroups: %s", strerror(errno));
        return -1;
    }
    snprintf(line, sizeof line, "%u %u 1", (unsigned)uid, (unsigned)uid);
    if (write_file("/proc/self/uid_map", line) != 0) {
        say(message, size, "user namespace: cannot write /proc/self/uid_map: %s", strerror(errno));
        return -1;
    }
    snprintf(line, sizeof line, "%u %u 1", (unsigned)gid, (unsigned)gid);
    if (write_file("/proc/self/gid_map", line) != 0) {
        say(message, size, "user namespace: cannot write /proc/self/gid_map: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static int64_t monotonic_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Ends the calling process the way `status` (a wait status) says its child ended: the same exit
   code, or the same signal (no core file: the child's crash is not this process's). */
static void end_like(int status) __attribute__((noreturn));
static void end_like(int status) {
    if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
    int number = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(number, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, number);
    sigprocmask(SIG_UNBLOCK, &only, NULL);
    kill(getpid(), number);
    kill(getpid(), SIGKILL);
    _exit(127);
}

/* pid 1 of the call's pid namespace: starts the worker, waits for it, its own deadline, or the
   relay's death (the `alive` pipe's hang-up), then hands the worker's wait status to the relay
   and exits. Its exit makes the kernel kill every process left in the namespace. */
static void run_init(const ba_call_jail *jail, int alive_read, int status_write) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    pid_t worker = fork();
    if (worker < 0) _exit(127);
    if (worker == 0) {
        close(alive_read);
        close(status_write);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        return;  // the worker goes on with the call
    }
    // Only the worker talks to the host.
    close(BA_RUNNER_PROTOCOL_FD);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        close(null);
    }
    int pidfd = ba_sys_pidfd_open(worker);
    int64_t deadline = jail->deadline_ms > 0 ? monotonic_ms() + jail->deadline_ms : 0;
    for (;;) {
        int status = 0;
        pid_t reaped = waitpid(worker, &status, WNOHANG);
        if (reaped == worker) {
            ssize_t ignored = write(status_write, &status, sizeof status);
            (void)ignored;
            _exit(0);
        }
        int timeout = -1;
        if (deadline > 0) {
            int64_t left = deadline - monotonic_ms();
            if (left <= 0) _exit(0);  // past the runner's own deadline: the namespace goes
            timeout = left > 1000000 ? 1000000 : (int)left;
        }
        if (pidfd < 0 && (timeout < 0 || timeout > 10)) timeout = 10;
        struct pollfd fds[2] = {{.fd = alive_read, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
        int ready = poll(fds, pidfd >= 0 ? 2 : 1, timeout);
        if (ready < 0 && errno != EINTR) _exit(127);
        if (ready > 0 && fds[0].revents != 0) _exit(0);  // the relay died: so does the call
    }
}

int ba_sys_die_with_parent(pid_t expected_parent) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return -1;
    if (expected_parent > 0 && getppid() != expected_parent) {
        errno = ESRCH;
        return -1;
    }
    return 0;
}

int ba_sys_enter_call_jail(const ba_call_jail *jail, char *message, size_t message_size) {
    // 1. Die with the host. PR_SET_PDEATHSIG only covers a parent that dies after this call:
    //    if the host already died (we were reparented), stop here.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
        say(message, message_size, "prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
        return -1;
    }
    if (jail->expected_parent > 0 && getppid() != jail->expected_parent) _exit(127);
    if (!jail->namespaces) return 0;

    // 2. A user namespace (needed for the others without privilege), a pid namespace, and with the
    //    sandbox a network namespace with nothing but a loopback that is down.
    uid_t uid = getuid();
    gid_t gid = getgid();
    int flags = CLONE_NEWUSER | CLONE_NEWPID | (jail->sandbox ? CLONE_NEWNET : 0);
    if (unshare(flags) != 0) {
        say(message, message_size,
            "namespaces: unshare(CLONE_NEWUSER | CLONE_NEWPID%s) failed: %s (unprivileged user namespaces may be "
            "disabled: sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces)",
            jail->sandbox ? " | CLONE_NEWNET" : "", strerror(errno));
        return -1;
    }
    if (map_ids(uid, gid, message, message_size) != 0) return -1;

    // 3. The tree: this process stays outside as the relay the host waits for; its first child is
    //    pid 1 of the new namespace; pid 1's child, the worker, makes the call.
    int alive[2], status_pipe[2];
    if (pipe2(alive, O_CLOEXEC) != 0 || pipe2(status_pipe, O_CLOEXEC) != 0) {
        say(message, message_size, "pipe2: %s", strerror(errno));
        return -1;
    }
    pid_t init = fork();
    if (init < 0) {
        say(message, message_size, "fork of the namespace's init: %s", strerror(errno));
        return -1;
    }
    if (init == 0) {
        close(alive[1]);
        close(status_pipe[0]);
        run_init(jail, alive[0], status_pipe[1]);
        // Only the worker gets here.
    } else {
        // The relay: nothing of the call's descriptors stays open here.
        close(alive[0]);
        close(status_pipe[1]);
        close(BA_RUNNER_PROTOCOL_FD);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
            close(null);
        }
        int init_status = 0;
        while (waitpid(init, &init_status, 0) < 0 && errno == EINTR) {}
        int worker_status = 0;
        ssize_t n;
        do {
            n = read(status_pipe[0], &worker_status, sizeof worker_status);
        } while (n < 0 && errno == EINTR);
        // No status: pid 1 ended the call at the runner's own deadline, or was killed. (A wait
        // status of 9 reads as "killed by SIGKILL".)
        end_like(n == (ssize_t)sizeof worker_status ? worker_status : SIGKILL);
    }

    // 4. The worker: the sandbox's process-wide layers, in the order they allow.
    if (!jail->sandbox) return 0;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        say(message, message_size, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
        return -1;
    }
    if (jail->max_processes > 0) {
        struct rlimit limit = {.rlim_cur = (rlim_t)jail->max_processes, .rlim_max = (rlim_t)jail->max_processes};
        if (setrlimit(RLIMIT_NPROC, &limit) != 0) {
            say(message, message_size, "setrlimit(RLIMIT_NPROC): %s", strerror(errno));
            return -1;
        }
    }
    if (apply_landlock(jail, message, message_size) != 0) return -1;
    if (apply_seccomp(message, message_size) != 0) return -1;
    return 0;
}

// ---- Loaded objects -----------------------------------------------------------------------------
#include <link.h>

struct visit_context {
    void (*visit)(const char *, void *);
    void *context;
};

static int visit_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct visit_context *visitor = data;
    if (info->dlpi_name == NULL || info->dlpi_name[0] != '/') return 0;
    char directory[4096];
    size_t length = strlen(info->dlpi_name);
    if (length >= sizeof directory) return 0;
    memcpy(directory, info->dlpi_name, length + 1);
    char *slash = strrchr(directory, '/');
    if (slash == directory) slash[1] = 0;
    else if (slash) *slash = 0;
    visitor->visit(directory, visitor->context);
    return 0;
}

void ba_sys_visit_loaded_object_directories(void (*visit)(const char *directory, void *context), void *context) {
    struct visit_context visitor = {visit, context};
    dl_iterate_phdr(visit_object, &visitor);
}
