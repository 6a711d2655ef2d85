// Linux calls that Swift's Glibc module does not expose (it is built without _GNU_SOURCE) or that
// must be async-signal-safe. Every function returns 0 or a result >= 0 on success and -1 with
// errno set on failure, retrying EINTR itself where that is safe.
#ifndef BA_SYSTEM_H
#define BA_SYSTEM_H
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

/// pipe2(O_CLOEXEC): no window in which a concurrently spawned child inherits the pipe.
int ba_sys_pipe_cloexec(int fds[2]);

/// Installs a handler for SIGTERM and SIGINT that writes the signal's number as one byte to
/// `write_fd` (non-blocking; a full pipe drops the byte, one is enough): the self-pipe way to
/// see a signal on a thread of one's own. A real handler, never SIG_IGN, so the kernel never
/// discards the signal whatever the threads' masks. Returns 0, or -1 with errno.
int ba_sys_install_shutdown_signals(int write_fd);

/// socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC).
int ba_sys_socketpair_cloexec(int fds[2]);

/// Spawns `path` with posix_spawn in a new process group (pgid = its pid), with every signal at
/// its default disposition and an empty signal mask. In the child: fd 0 is /dev/null, fds 1 and
/// 2 are `output_fd`, and `protocol_fd` becomes fd 3. Every other descriptor is closed in the
/// child, O_CLOEXEC or not (closefrom 4). Returns 0 and the pid in *pid_out, or an errno value.
int ba_sys_spawn(const char *path, char *const argv[], char *const envp[], int protocol_fd, int output_fd,
                 pid_t *pid_out);

/// Starts `path` like ba_sys_spawn, but with _Fork and execve instead of posix_spawn, so that the
/// child can ask before exec for `death_signal` when its parent dies (prctl PR_SET_PDEATHSIG, which
/// posix_spawn has no attribute for). In the child, between fork and exec, only async-signal-safe
/// calls: its own process group (pgid = its pid); every signal at its default disposition (SIG_IGN
/// too) and an empty signal mask; fd 0 /dev/null, fd 1 `output_fd`, fd 2 `error_fd`; every other
/// descriptor closed. A child whose parent already died before the prctl exits 127 without exec.
///
/// The kernel sends `death_signal` when the *thread* that called this ends, not the process: call it
/// from a thread that lives as long as the process. Returns 0 and the pid in *pid_out, or an errno
/// value (also when exec fails: the child reports it on a close-on-exec pipe, and is reaped).
int ba_sys_spawn_tied_to_parent(const char *path, char *const argv[], char *const envp[], int output_fd,
                                int error_fd, int death_signal, pid_t *pid_out);

/// pidfd_open(2): a descriptor that polls readable when the process exits. -1/ENOSYS on old kernels.
int ba_sys_pidfd_open(pid_t pid);

/// Sets RLIMIT_DATA (soft and hard) to `bytes`.
int ba_sys_set_data_limit(uint64_t bytes);

/// Reads a "Key:   N kB" line of /proc/self/status in bytes (e.g. "VmHWM"), async-signal-safe.
/// Returns -1 if it cannot be read.
int64_t ba_sys_proc_status_bytes(const char *key);

/// Installs handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT and SIGTRAP that, on an
/// alternate stack, write one line to fd 2:
///   "[ba-extension-runner] fatal signal=N vmdata_bytes=D limit_bytes=L\n"
/// and then re-raise the signal with its default action, so the parent still sees the signal.
/// The parent uses the line to tell an allocation failure at the memory cap from a plain crash.
int ba_sys_install_crash_reporter(uint64_t memory_limit_bytes);

/// Installs a handler for each of `signals` that writes the signal's number (one byte) to a pipe,
/// and returns the pipe's read end (O_CLOEXEC), or -1/errno. The handler is in place when this
/// returns (unlike a dispatch source's, registered later on another thread), so no signal is lost
/// or left to its default action after the call. Every call shares the one pipe.
int ba_sys_signal_pipe(const int *signals, int count);

/// Makes stdout line buffered (setvbuf, _IOLBF): what `print` wrote reaches the file at each
/// newline even when the process ends with _exit. 0, or non-zero when setvbuf refused.
int ba_sys_line_buffer_stdout(void);

/// Writes all of `length` bytes, retrying EINTR and short writes. 0 or -1/errno.
int ba_sys_write_all(int fd, const void *bytes, size_t length);

/// Like ba_sys_write_all on a socket, with MSG_NOSIGNAL: a closed peer gives EPIPE, not SIGPIPE.
int ba_sys_send_all(int fd, const void *bytes, size_t length);

/// sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE): starts writeback of that range
/// without waiting for it. Errors are ignored (it is only a head start for a later fsync).
void ba_sys_start_writeback(int fd, int64_t offset, int64_t length);

/// The runner's protocol descriptor (the host's end of a socketpair, as fd 3 in the runner).
#define BA_RUNNER_PROTOCOL_FD 3

/// ba-extension-runner's arguments (the host writes them, the runner reads them): each flag is
/// followed by one value; `--read` and `--write` may repeat. Without `--parent` the runner is not
/// confined at all (as a runner started by hand).
#define BA_RUNNER_ARG_PARENT "--parent"
#define BA_RUNNER_ARG_DEADLINE_MS "--deadline-ms"
#define BA_RUNNER_ARG_SANDBOX "--sandbox"  // "on" or "off"
#define BA_RUNNER_ARG_READ "--read"
#define BA_RUNNER_ARG_WRITE "--write"
#define BA_RUNNER_ARG_TEMPORARY "--temporary"
#define BA_RUNNER_ARG_MAX_PROCESSES "--max-processes"
/// The runner's exit status when the jail or the sandbox could not be set up (before hello); its
/// last line on stderr then starts with BA_RUNNER_SANDBOX_FAILURE_PREFIX and names the layer.
#define BA_RUNNER_EXIT_SANDBOX_UNAVAILABLE 4
#define BA_RUNNER_SANDBOX_FAILURE_PREFIX "[ba-extension-runner] sandbox unavailable: "

/// How ba_sys_enter_call_jail confines one extension call (docs/threat-model.md).
typedef struct ba_call_jail {
    /// The host's pid: the runner stops at once if its parent is already another process.
    pid_t expected_parent;
    /// The runner's own deadline in milliseconds from entry (0: none): past it the call's pid
    /// namespace ends even if the host is gone or stuck.
    int64_t deadline_ms;
    /// 1: a user and a pid namespace per call, so every process the call creates ends with it.
    int namespaces;
    /// 1: also a network namespace, no_new_privs, RLIMIT_NPROC, Landlock and the seccomp filter.
    int sandbox;
    /// Paths the call may read (and execute), and paths it may read and write.
    const char *const *read_paths;
    size_t read_count;
    const char *const *write_paths;
    size_t write_count;
    /// RLIMIT_NPROC inside the call's user namespace (0: unchanged). uid 0 is exempt by the kernel.
    uint64_t max_processes;
} ba_call_jail;

/// Confines the calling process, which must be single-threaded, for one extension call: asks for
/// SIGKILL when its parent dies (and exits 127 if `expected_parent` is already gone); with
/// `namespaces`, unshares a user and a pid namespace (and with `sandbox` a network namespace) and
/// forks twice. The caller stays outside as a relay that waits and then ends exactly as the
/// worker did (exit code or signal); the first child is pid 1 of the namespace, which waits for
/// the worker, enforces `deadline_ms`, and whose exit kills whatever the call left; the second,
/// the worker, returns 0 from this function with the sandbox's layers applied. Only the worker
/// returns; on failure it returns -1 with the reason in `message` (the layer and the errno).
int ba_sys_enter_call_jail(const ba_call_jail *jail, char *message, size_t message_size);

/// Calls `visit` with the directory of every shared object loaded in this process (duplicates
/// included; the main program, which has no name here, is left out).
void ba_sys_visit_loaded_object_directories(void (*visit)(const char *directory, void *context), void *context);

/// Asks for SIGKILL when the parent dies; -1 if the parent is already not `expected_parent`.
int ba_sys_die_with_parent(pid_t expected_parent);

/// The warm runner's first argument, followed by the host's pid.
#define BA_RUNNER_ARG_ZYGOTE "--zygote"

/// Serves as the warm runner (zygote) on `control`, a SOCK_SEQPACKET socket to the host; the
/// caller must be single-threaded. Sends a 4-byte 0 when ready, then for each request (the runner
/// arguments, NUL-separated, with three descriptors: the protocol socket, the output pipe and a
/// status pipe) forks a child in its own process group that dies with the zygote, has fds 0-3 as
/// a spawned runner has them, and calls `run_call(argc, argv)` (which must not return). On the
/// status pipe the zygote writes the child's pid (4 bytes; a negative errno if it could not
/// fork), then its wait status when it ends, and closes it. Returns 0 when the host closes
/// `control`, -1/errno on failure.
int ba_sys_zygote_serve(int control, void (*run_call)(int argc, char **argv));

/// The host's side of one request to a zygote (see ba_sys_zygote_serve). 0 or -1/errno.
int ba_sys_zygote_request(int control, const char *arguments, size_t length, int protocol_fd, int output_fd,
                          int status_fd);

/// socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC).
int ba_sys_seqpacket_pair_cloexec(int fds[2]);

/// The number of threads of this process (/proc/self/status), or -1.
int ba_sys_thread_count(void);

/// The running kernel's Landlock ABI version, or -1 if Landlock is unavailable.
int ba_sys_landlock_abi(void);

/// Returns free heap memory to the kernel (glibc's `malloc_trim(0)`); 1 if some was released.
/// The corresponding C function is `malloc_trim`.
int ba_sys_malloc_trim(void);

/// Swaps two names in one step (`renameat2` with `RENAME_EXCHANGE`): both must exist; a reader
/// sees either the old pair or the new one. 0 on success, -1 with `errno` set (`EINVAL` where the
/// file system cannot). The corresponding C function is `renameat2`.
int ba_sys_rename_exchange(int old_dir, const char *old_name, int new_dir, const char *new_name);

#endif
