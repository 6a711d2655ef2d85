#include "ba_os_log.h"

#include <dlfcn.h>
#include <stddef.h>

static ba_os_log_to_host_fn find_in(void *handle) {
    if (handle == NULL) return NULL;
    /* The handle stays open: RTLD_NOLOAD only took a reference, and the function is kept. */
    return (ba_os_log_to_host_fn)dlsym(handle, "ba_os_log_to_host");
}

ba_os_log_to_host_fn ba_os_log_find_host(void) {
    Dl_info self;
    if (dladdr((void *)&ba_os_log_find_host, &self) != 0 && self.dli_fname != NULL) {
        ba_os_log_to_host_fn found = find_in(dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD));
        if (found != NULL) return found;
    }
    return find_in(dlopen("libBackgroundAssets.so", RTLD_NOW | RTLD_NOLOAD));
}
