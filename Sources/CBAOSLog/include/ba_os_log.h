// The `os` module's lookup of BackgroundAssets' host-log entry (dladdr and RTLD_NOLOAD need
// _GNU_SOURCE, which Swift's Glibc module is built without).
#ifndef BA_OS_LOG_H
#define BA_OS_LOG_H

#include <stdbool.h>
#include <stdint.h>

/// BackgroundAssets' `ba_os_log_to_host`: writes a line to the host's log during an extension call.
typedef bool (*ba_os_log_to_host_fn)(int32_t level, const char *message);

/// Finds `ba_os_log_to_host` in the object that holds this code and its dependencies (an extension
/// built in one package has BackgroundAssets linked into its own library, which the runner loads
/// RTLD_LOCAL, out of a global lookup's reach), then in an already loaded libBackgroundAssets.so.
/// NULL when neither has it. Loads nothing.
ba_os_log_to_host_fn ba_os_log_find_host(void);

#endif
