// The warm runner (zygote): a single-threaded ba-extension-runner that forks one child per call.
// See ba_system.h (ba_sys_zygote_serve, ba_sys_zygote_request).
#include "ba_system.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define ZYGOTE_MAX_CALLS 1024
#define ZYGOTE_MAX_ARGS 512
#define ZYGOTE_MESSAGE_BYTES (64 * 1024)

struct zygote_call {
    pid_t pid;
    int status_fd;
};

/* One int on a pipe (the status of a call), or on the control socket (send: no SIGPIPE). */
static int write_int(int fd, int32_t value) { return ba_sys_write_all(fd, &value, sizeof value); }
static int send_int(int fd, int32_t value) { return ba_sys_send_all(fd, &value, sizeof value); }

/* Receives one request: the arguments ("\0"-separated) and three descriptors. Returns the payload
   length, 0 at end of stream, -1 on error (a malformed message also closes what it carried). */
static ssize_t receive_request(int control, char *buffer, size_t size, int fds[3]) {
    union {
        char bytes[CMSG_SPACE(3 * sizeof(int))];
        struct cmsghdr align;
    } control_buffer;
    struct iovec vector = {buffer, size};
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1, .msg_control = control_buffer.bytes,
                             .msg_controllen = sizeof control_buffer.bytes};
    ssize_t n;
    do {
        n = recvmsg(control, &message, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return n;
    int count = 0;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        int carried = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int *received = (int *)CMSG_DATA(header);
        for (int i = 0; i < carried; i++) {
            if (count < 3) fds[count++] = received[i];
            else close(received[i]);
        }
    }
    if (count != 3 || (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        for (int i = 0; i < count; i++) close(fds[i]);
        errno = EBADMSG;
        return -1;
    }
    return n;
}

/* The child of one call: async-signal-safe setup, then the call itself (never returns). */
static void become_call(int control, int signal_fd, struct zygote_call *calls, pid_t zygote, int fds[3],
                        char *payload, ssize_t length, void (*run_call)(int argc, char **argv)) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != zygote) _exit(127);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    close(control);
    close(signal_fd);
    for (int i = 0; i < ZYGOTE_MAX_CALLS; i++)
        if (calls[i].pid > 0) close(calls[i].status_fd);
    close(fds[2]);  // the status descriptor is the zygote's to write
    // fds 0-3 as a spawned runner has them: /dev/null, the output pipe twice, the protocol socket.
    int protocol = fcntl(fds[0], F_DUPFD, 10), output = fcntl(fds[1], F_DUPFD, 10);
    int null = open("/dev/null", O_RDONLY);
    if (protocol < 0 || output < 0 || null < 0) _exit(127);
    if (dup2(null, 0) < 0 || dup2(output, 1) < 0 || dup2(output, 2) < 0 || dup2(protocol, BA_RUNNER_PROTOCOL_FD) < 0)
        _exit(127);
    closefrom(BA_RUNNER_PROTOCOL_FD + 1);
    char *argv[ZYGOTE_MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "ba-extension-runner";
    for (ssize_t start = 0; start < length && argc < ZYGOTE_MAX_ARGS + 1;) {
        argv[argc++] = payload + start;
        start += (ssize_t)strlen(payload + start) + 1;
    }
    argv[argc] = NULL;
    run_call(argc, argv);
    _exit(127);
}

int ba_sys_zygote_serve(int control, void (*run_call)(int argc, char **argv)) {
    static struct zygote_call calls[ZYGOTE_MAX_CALLS];
    static char payload[ZYGOTE_MESSAGE_BYTES + 1];
    pid_t zygote = getpid();
    sigset_t child_signal;
    sigemptyset(&child_signal);
    sigaddset(&child_signal, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &child_signal, NULL) != 0) return -1;
    int signal_fd = signalfd(-1, &child_signal, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signal_fd < 0) return -1;
    // A host that went away must not kill the zygote through a status pipe with no reader.
    signal(SIGPIPE, SIG_IGN);
    // Ready: the host may send requests now.
    if (send_int(control, 0) != 0) return -1;
    for (;;) {
        struct pollfd fds[2] = {{.fd = control, .events = POLLIN}, {.fd = signal_fd, .events = POLLIN}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (fds[1].revents) {
            struct signalfd_siginfo info;
            while (read(signal_fd, &info, sizeof info) > 0) {}
            int status;
            pid_t pid;
            while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
                for (int i = 0; i < ZYGOTE_MAX_CALLS; i++) {
                    if (calls[i].pid != pid) continue;
                    (void)write_int(calls[i].status_fd, status);
                    close(calls[i].status_fd);
                    calls[i].pid = 0;
                    break;
                }
            }
        }
        if (!fds[0].revents) continue;
        int received[3];
        ssize_t length = receive_request(control, payload, ZYGOTE_MESSAGE_BYTES, received);
        if (length == 0) return 0;  // the host closed its end: done
        if (length < 0) {
            if (errno == EBADMSG) continue;
            return -1;
        }
        payload[length] = 0;
        int slot = -1;
        for (int i = 0; i < ZYGOTE_MAX_CALLS && slot < 0; i++)
            if (calls[i].pid == 0) slot = i;
        pid_t pid = slot < 0 ? -1 : fork();
        if (pid == 0) become_call(control, signal_fd, calls, zygote, received, payload, length, run_call);
        close(received[0]);
        close(received[1]);
        if (pid < 0) {
            (void)write_int(received[2], slot < 0 ? -EAGAIN : -errno);
            close(received[2]);
            continue;
        }
        // Also here, so the group exists before the host hears the pid (whichever runs first).
        setpgid(pid, pid);
        calls[slot] = (struct zygote_call){.pid = pid, .status_fd = received[2]};
        (void)write_int(received[2], pid);
    }
}

int ba_sys_zygote_request(int control, const char *arguments, size_t length, int protocol_fd, int output_fd,
                          int status_fd) {
    union {
        char bytes[CMSG_SPACE(3 * sizeof(int))];
        struct cmsghdr align;
    } control_buffer;
    memset(&control_buffer, 0, sizeof control_buffer);
    struct iovec vector = {(void *)arguments, length};
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1, .msg_control = control_buffer.bytes,
                             .msg_controllen = sizeof control_buffer.bytes};
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(3 * sizeof(int));
    int fds[3] = {protocol_fd, output_fd, status_fd};
    memcpy(CMSG_DATA(header), fds, sizeof fds);
    ssize_t n;
    do {
        n = sendmsg(control, &message, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n == (ssize_t)length ? 0 : -1;
}

int ba_sys_seqpacket_pair_cloexec(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds);
}

int ba_sys_thread_count(void) {
    int64_t count = -1;
    char buffer[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buffer, sizeof buffer - 1);
    close(fd);
    if (n <= 0) return -1;
    buffer[n] = 0;
    char *line = strstr(buffer, "\nThreads:");
    if (line == NULL) return -1;
    count = 0;
    for (char *p = line + 9; *p && *p != '\n'; p++)
        if (*p >= '0' && *p <= '9') count = count * 10 + (*p - '0');
    return (int)count;
}
