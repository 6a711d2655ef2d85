// Debian's libsystemd (libsystemd-dev): sd-bus, basd's D-Bus client (BADesktopBus).
// Only the non-variadic calls are used from Swift; what Swift cannot call is wrapped here.
#ifndef CSDBUS_SHIM_H
#define CSDBUS_SHIM_H
#include <systemd/sd-bus.h>

/// A client connection to the bus at `address` (a D-Bus address such as `unix:path=/run/dbus/system_bus_socket`),
/// started (the Hello exchange is queued, not waited for). Returns 0 or a negative errno.
/// The corresponding C functions are `sd_bus_new`, `sd_bus_set_address`, `sd_bus_set_bus_client` and `sd_bus_start`.
static inline int ba_sd_bus_open_address(const char *address, sd_bus **ret) {
    sd_bus *bus = NULL;
    int r = sd_bus_new(&bus);
    if (r < 0) return r;
    r = sd_bus_set_address(bus, address);
    if (r >= 0) r = sd_bus_set_bus_client(bus, 1);
    if (r >= 0) r = sd_bus_start(bus);
    if (r < 0) {
        sd_bus_unref(bus);
        return r;
    }
    *ret = bus;
    return 0;
}

/// `SD_BUS_ERROR_NULL`, which Swift cannot spell (a macro of a compound literal).
static inline sd_bus_error ba_sd_bus_error_null(void) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    return error;
}
#endif
