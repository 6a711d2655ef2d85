/*
 * BATestNoDescriptor: a shared library for the tests that exports a function but no
 * ba_extension_descriptor: the host must report a missing entry point.
 */
#include "ba_extension.h"

BA_EXTENSION_EXPORT int ba_not_a_descriptor(void);

BA_EXTENSION_EXPORT int ba_not_a_descriptor(void)
{
    return 0;
}
