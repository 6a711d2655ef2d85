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

/// Writes all of `length` bytes, retrying EINTR and short writes. 0 or -1/errno.
int ba_sys_write_all(int fd, const void *bytes, size_t length);

/// Like ba_sys_write_all on a socket, with MSG_NOSIGNAL: a closed peer gives EPIPE, not SIGPIPE.
int ba_sys_send_all(int fd, const void *bytes, size_t length);

/// sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE): starts writeback of that range
/// without waiting for it. Errors are ignored (it is only a head start for a later fsync).
void ba_sys_start_writeback(int fd, int64_t offset, int64_t length);

#endif
