#ifndef BA_EXTENSION_MAIN_H
#define BA_EXTENSION_MAIN_H

/*
 * How a Swift extension exported by `@main` is found (see docs/writing-an-extension-swift.md).
 *
 * `@main` on a `BADownloaderExtension` type makes the Swift compiler emit a C `main` symbol in the
 * extension's shared library, calling the type's `static func main()` (BackgroundAssets supplies
 * it: it registers the type). This module defines a *weak* `ba_extension_descriptor`, so the
 * runner's `dlsym(handle, "ba_extension_descriptor")` finds it when the extension does not define
 * its own (an explicit `@_cdecl("ba_extension_descriptor")` always wins: strong over weak when
 * BackgroundAssets is linked into the extension, and the extension's own symbol first when
 * BackgroundAssets is a separate libBackgroundAssets.so). The weak definition finds the loaded
 * library whose own `main` that is, and hands it to `ba_main_extension_descriptor` (Swift).
 */

/* The C `main` the Swift compiler emits for `@main`. */
typedef int (*ba_extension_main_fn)(int argc, char **argv);

/*
 * The `main` of the loaded library that holds the extension: the library this code is linked
 * into if it has one of its own, else the only other loaded library (not the executable) with a
 * `main` of its own. NULL when there is none; NULL and `*ambiguous` set to 1 when several.
 */
ba_extension_main_fn ba_find_extension_main(int *ambiguous);

#endif
