// Thin typed accessors for libffi from Swift 6: libffi's built-in type descriptors are mutable C
// globals, which Swift 6 refuses to touch directly, so we hand out their addresses.
#ifndef CFFI_SHIM_H
#define CFFI_SHIM_H
#include <ffi.h>

static inline ffi_type *_Nonnull cffi_type_void(void) { return &ffi_type_void; }
static inline ffi_type *_Nonnull cffi_type_pointer(void) { return &ffi_type_pointer; }
static inline ffi_type *_Nonnull cffi_type_sint32(void) { return &ffi_type_sint32; }
static inline ffi_type *_Nonnull cffi_type_uint64(void) { return &ffi_type_uint64; }
static inline ffi_type *_Nonnull cffi_type_sint64(void) { return &ffi_type_sint64; }

/// The default calling convention of this platform.
static inline ffi_abi cffi_default_abi(void) { return FFI_DEFAULT_ABI; }

/// `ffi_closure_alloc` returns both the writable closure and its executable address.
static inline ffi_closure *cffi_closure_alloc(void **code) {
    return (ffi_closure *)ffi_closure_alloc(sizeof(ffi_closure), code);
}
#endif
