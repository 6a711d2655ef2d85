#include "ba_extension_main.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

/* Implemented in Swift (BackgroundAssets, BAExtensionMain.swift): calls `main`, returns the
 * descriptor of the type it registered, or NULL. */
extern const void *ba_main_extension_descriptor(void *main_function, int ambiguous);

/* Weak: an extension's own `ba_extension_descriptor` (the explicit export line) takes precedence. */
__attribute__((weak, visibility("default"))) const void *ba_extension_descriptor(void) {
    int ambiguous = 0;
    ba_extension_main_fn main_function = ba_find_extension_main(&ambiguous);
    return ba_main_extension_descriptor((void *)main_function, ambiguous);
}

enum { MAX_OBJECTS = 512 };

struct loaded_objects {
    char *names[MAX_OBJECTS];
    int count;
};

/* Collects names only: dlopen inside dl_iterate_phdr's callback would take the loader's lock again. */
static int collect(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct loaded_objects *objects = data;
    /* The executable has an empty name; it has its own main (the runner's), never the extension. */
    if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0') return 0;
    if (objects->count == MAX_OBJECTS) return 1;
    char *copy = strdup(info->dlpi_name);
    if (copy != NULL) objects->names[objects->count++] = copy;
    return 0;
}

/* The object's own `main` (dlsym also searches its dependencies: check where the symbol lives). */
static ba_extension_main_fn own_main(const char *name) {
    void *handle = dlopen(name, RTLD_NOLOAD | RTLD_LAZY);
    if (handle == NULL) return NULL;
    void *symbol = dlsym(handle, "main");
    Dl_info where;
    ba_extension_main_fn result = NULL;
    if (symbol != NULL && dladdr(symbol, &where) != 0 && where.dli_fname != NULL
        && strcmp(where.dli_fname, name) == 0) {
        result = (ba_extension_main_fn)symbol;
    }
    dlclose(handle); /* only drops the reference RTLD_NOLOAD took */
    return result;
}

ba_extension_main_fn ba_find_extension_main(int *ambiguous) {
    *ambiguous = 0;
    struct loaded_objects objects = {.count = 0};
    dl_iterate_phdr(collect, &objects);

    /* The object this code is linked into (the extension itself, when BackgroundAssets is linked in). */
    Dl_info self;
    const char *self_name = NULL;
    if (dladdr((void *)&ba_find_extension_main, &self) != 0) self_name = self.dli_fname;

    ba_extension_main_fn found = NULL, own = NULL;
    int candidates = 0;
    for (int index = 0; index < objects.count; index++) {
        ba_extension_main_fn candidate = own_main(objects.names[index]);
        if (candidate == NULL) continue;
        if (self_name != NULL && strcmp(objects.names[index], self_name) == 0) own = candidate;
        candidates++;
        found = candidate;
    }
    for (int index = 0; index < objects.count; index++) free(objects.names[index]);
    if (own != NULL) return own;
    if (candidates > 1) {
        *ambiguous = 1;
        return NULL;
    }
    return found;
}
