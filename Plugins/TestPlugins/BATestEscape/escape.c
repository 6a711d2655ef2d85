/*
 * BATestEscape: a hostile extension for the sandbox tests. Its "manifest" is a list of lines,
 * `ACTION [ARGUMENT...]`; downloads_for_request tries each and logs one line per action:
 * "ACTION: ok ..." when it succeeded, "ACTION: refused: <strerror> (errno N)" when the system said
 * no. Nothing here is meant to work: the tests expect every attempt to be refused or contained.
 *
 *   connect-tcp HOST PORT  socket + connect over TCP (IPv4)
 *   unix PATH              socket + connect to a unix socket (e.g. basd's)
 *   read PATH              open and read one byte
 *   write PATH             create or append to a file
 *   daemon FILE            fork, setsid, fork again: the grandchild writes its pid (as the
 *                          host sees it) to FILE and sleeps 120 s
 *   pgid-daemon FILE       the same with setpgid(0, 0) instead of setsid
 *   fork-flood N [FILE]    fork up to N children that pause; logs how many forks succeeded; the
 *                          first child writes its pid (as the host sees it) to FILE
 *   ptrace                 fork a child, then PTRACE_ATTACH and process_vm_readv on it
 *   pid FILE               write this process's pid (as the host sees it) to FILE
 *   hang                   pause forever (the call ends at its deadline)
 *   plant TARGET LINK      the confused-deputy attack: move LINK aside (if it exists) and put a
 *                          symbolic link to TARGET in its place, creating LINK's folders first
 *   download ID URL [SIZE] return a download (add_download), with its fileSize if given
 *   plant-current DIR TARGET  for each current download, a link DIR/UNIQUEID-IDENTIFIER to
 *                          TARGET/IDENTIFIER (basd's name for its finished file, planted ahead)
 *   lock                   take the exclusive-control lock (acquire_exclusive_control), then release it
 *
 * download_finished runs the lines of `$BA_APP_GROUP_CONTAINER/on-finished` the same way, with
 * `%DIR%` replaced by the finished file's folder.
 */
#define _GNU_SOURCE
#include "ba_extension.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const ba_host_api *host, const char *format, ...)
{
    char line[512];
    va_list arguments;
    va_start(arguments, format);
    int length = vsnprintf(line, sizeof line, format, arguments);
    va_end(arguments);
    if (length < 0) return;
    if ((size_t)length >= sizeof line) length = (int)sizeof line - 1;
    host->log(BA_LOG_INFO, line, (size_t)length);
}

static void refused(const ba_host_api *host, const char *action, int error)
{
    say(host, "%s: refused: %s (errno %d)", action, strerror(error), error);
}

/* This process's pid in the host's pid namespace: /proc is the host's mount. */
static int write_host_pid(const char *file)
{
    char link[64];
    ssize_t n = readlink("/proc/self", link, sizeof link - 1);
    if (n <= 0) return -1;
    link[n] = '\n';
    char temporary[4096];
    snprintf(temporary, sizeof temporary, "%s.tmp", file);
    int fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    ssize_t written = write(fd, link, (size_t)n + 1);
    close(fd);
    if (written != n + 1) return -1;
    return rename(temporary, file);
}

static void daemonize(const ba_host_api *host, const char *action, const char *file, int use_setsid)
{
    pid_t child = fork();
    if (child < 0) return refused(host, action, errno);
    if (child == 0) {
        if (use_setsid) (void)setsid();
        else (void)setpgid(0, 0);
        pid_t grandchild = fork();
        if (grandchild == 0) {
            (void)write_host_pid(file);
            for (int i = 0; i < 120; i++) sleep(1);
            _exit(0);
        }
        _exit(0);
    }
    (void)waitpid(child, NULL, 0);
    /* Wait (bounded) until the grandchild has written its pid. */
    for (int i = 0; i < 500 && access(file, F_OK) != 0; i++) usleep(10000);
    say(host, "%s: ok, detached", action);
}

struct plant_context {
    const ba_host_api *host;
    const char *directory;
    const char *target;
};

static void plant_one(void *user_data, const ba_download *download)
{
    struct plant_context *context = user_data;
    char link[4096], target[4096];
    snprintf(link, sizeof link, "%s/%.*s-%.*s", context->directory, (int)download->unique_identifier_length,
             download->unique_identifier, (int)download->identifier_length, download->identifier);
    snprintf(target, sizeof target, "%s/%.*s", context->target, (int)download->identifier_length, download->identifier);
    if (symlink(target, link) != 0) return refused(context->host, "plant-current", errno);
    say(context->host, "plant-current: ok, %s", link);
}

static void make_parents(char *path)
{
    for (char *slash = strchr(path + 1, '/'); slash != NULL; slash = strchr(slash + 1, '/')) {
        *slash = 0;
        mkdir(path, 0700);
        *slash = '/';
    }
}

static void run(const ba_host_api *host, char *line)
{
    char *words[4] = {0};
    int count = 0;
    for (char *word = strtok(line, " \t"); word && count < 4; word = strtok(NULL, " \t")) words[count++] = word;
    if (count == 0) return;
    const char *action = words[0];
    if (strcmp(action, "connect-tcp") == 0 && count >= 3) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) return refused(host, action, errno);
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(words[2]))};
        inet_pton(AF_INET, words[1], &address.sin_addr);
        int rc = connect(fd, (struct sockaddr *)&address, sizeof address);
        int error = errno;
        close(fd);
        if (rc != 0) return refused(host, action, error);
        say(host, "%s: ok, connected", action);
    } else if (strcmp(action, "unix") == 0 && count >= 2) {
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0) return refused(host, action, errno);
        struct sockaddr_un address = {.sun_family = AF_UNIX};
        snprintf(address.sun_path, sizeof address.sun_path, "%s", words[1]);
        int rc = connect(fd, (struct sockaddr *)&address, sizeof address);
        int error = errno;
        close(fd);
        if (rc != 0) return refused(host, action, error);
        say(host, "%s: ok, connected", action);
    } else if (strcmp(action, "read") == 0 && count >= 2) {
        int fd = open(words[1], O_RDONLY | O_CLOEXEC);
        if (fd < 0) return refused(host, action, errno);
        char byte;
        ssize_t n = read(fd, &byte, 1);
        int error = errno;
        close(fd);
        if (n < 0) return refused(host, action, error);
        say(host, "%s: ok, read %zd byte", action, n);
    } else if (strcmp(action, "write") == 0 && count >= 2) {
        int fd = open(words[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd < 0) return refused(host, action, errno);
        ssize_t n = write(fd, "escaped\n", 8);
        int error = errno;
        close(fd);
        if (n < 0) return refused(host, action, error);
        say(host, "%s: ok, wrote", action);
    } else if (strcmp(action, "plant") == 0 && count >= 3) {
        char aside[4096];
        make_parents(words[2]);
        snprintf(aside, sizeof aside, "%s.aside", words[2]);
        if (rename(words[2], aside) != 0 && errno != ENOENT) return refused(host, action, errno);
        if (symlink(words[1], words[2]) != 0) return refused(host, action, errno);
        say(host, "%s: ok, %s -> %s", action, words[2], words[1]);
    } else if (strcmp(action, "download") == 0 && count >= 3) {
        ba_download download = {.struct_size = sizeof download};
        download.identifier = words[1];
        download.identifier_length = strlen(words[1]);
        download.url = words[2];
        download.url_length = strlen(words[2]);
        if (count >= 4) download.file_size = atoll(words[3]);
        int32_t code = 0;
        if (host->add_download(&download, &code) != BA_OK) return say(host, "%s: failed, code %d", action, code);
        say(host, "%s: ok, %s", action, words[1]);
    } else if (strcmp(action, "plant-current") == 0 && count >= 3) {
        struct plant_context context = {.host = host, .directory = words[1], .target = words[2]};
        int32_t code = 0;
        if (host->current_downloads(plant_one, &context, &code) != BA_OK)
            return say(host, "%s: failed, code %d", action, code);
    } else if (strcmp(action, "lock") == 0) {
        int32_t code = 0;
        if (host->acquire_exclusive_control(5000, &code) != BA_OK) {
            size_t length = 0;
            const char *message = host->last_error_message(&length);
            return say(host, "%s: refused: code %d: %.*s", action, code, (int)length, message ? message : "");
        }
        host->release_exclusive_control(&code);
        say(host, "%s: ok, taken and released", action);
    } else if (strcmp(action, "daemon") == 0 && count >= 2) {
        daemonize(host, action, words[1], 1);
    } else if (strcmp(action, "pgid-daemon") == 0 && count >= 2) {
        daemonize(host, action, words[1], 0);
    } else if (strcmp(action, "fork-flood") == 0 && count >= 2) {
        int wanted = atoi(words[1]), made = 0, error = 0;
        for (; made < wanted; made++) {
            pid_t child = fork();
            if (child == 0) {
                if (count >= 3 && made == 0) (void)write_host_pid(words[2]);
                pause();
                _exit(0);
            }
            if (child < 0) {
                error = errno;
                break;
            }
        }
        for (int i = 0; count >= 3 && made > 0 && i < 500 && access(words[2], F_OK) != 0; i++) usleep(10000);
        if (error) say(host, "%s: stopped after %d forks: %s (errno %d)", action, made, strerror(error), error);
        else say(host, "%s: ok, %d forks", action, made);
    } else if (strcmp(action, "ptrace") == 0) {
        pid_t child = fork();
        if (child < 0) return refused(host, action, errno);
        if (child == 0) {
            pause();
            _exit(0);
        }
        if (ptrace(PTRACE_ATTACH, child, NULL, NULL) != 0) refused(host, "ptrace", errno);
        else say(host, "ptrace: ok, attached");
        char buffer[8];
        struct iovec local = {buffer, sizeof buffer}, remote = {(void *)&buffer, sizeof buffer};
        if (process_vm_readv(child, &local, 1, &remote, 1, 0) < 0) refused(host, "process_vm_readv", errno);
        else say(host, "process_vm_readv: ok, read");
        kill(child, SIGKILL);
        (void)waitpid(child, NULL, 0);
    } else if (strcmp(action, "pid") == 0 && count >= 2) {
        if (write_host_pid(words[1]) != 0) return refused(host, action, errno);
        say(host, "%s: ok", action);
    } else if (strcmp(action, "hang") == 0) {
        say(host, "hang: hanging");
        for (;;) pause();
    } else {
        say(host, "%s: unknown action", action);
    }
}

static void escape_downloads_for_request(void *context, const ba_host_api *host, const ba_content_request_info *request)
{
    (void)context;
    char path[4096];
    snprintf(path, sizeof path, "%.*s", (int)request->manifest_path_length, request->manifest_path);
    FILE *manifest = fopen(path, "r");
    if (manifest == NULL) return refused(host, "manifest", errno);
    char line[4096];
    while (fgets(line, sizeof line, manifest) != NULL) {
        line[strcspn(line, "\r\n")] = 0;
        run(host, line);
    }
    fclose(manifest);
}

static void escape_download_finished(void *context, const ba_host_api *host, const ba_download *download,
                                     const char *file_path, size_t file_path_length)
{
    (void)context;
    (void)download;
    const char *container = getenv("BA_APP_GROUP_CONTAINER");
    if (container == NULL) return;
    char path[4096], directory[4096];
    snprintf(path, sizeof path, "%s/on-finished", container);
    snprintf(directory, sizeof directory, "%.*s", (int)file_path_length, file_path);
    char *slash = strrchr(directory, '/');
    if (slash != NULL) *slash = 0;
    FILE *script = fopen(path, "r");
    if (script == NULL) return;
    char line[4096];
    while (fgets(line, sizeof line, script) != NULL) {
        line[strcspn(line, "\r\n")] = 0;
        char expanded[8192];
        char *marker = strstr(line, "%DIR%");
        if (marker != NULL) {
            *marker = 0;
            snprintf(expanded, sizeof expanded, "%s%s%s", line, directory, marker + 5);
        } else {
            snprintf(expanded, sizeof expanded, "%s", line);
        }
        run(host, expanded);
    }
    fclose(script);
}

BA_EXTENSION_DEFINE("BATestEscape", "1.0.0", .downloads_for_request = escape_downloads_for_request,
                    .download_finished = escape_download_finished)
