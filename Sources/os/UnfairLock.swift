#if canImport(Glibc)
    @_exported import Glibc
#elseif canImport(Musl)
    @_exported import Musl
#endif

// Apple's `os_unfair_lock` C API, as Apple's `os` module gives it to Swift.
//
// A module named `os` in a build makes `#if canImport(os)` true for every package built with it,
// whether or not the package depends on it; such code (swift-argument-parser's `Mutex`, for one)
// then takes its Apple path and uses `os_unfair_lock`. So the lock is here, and written so that
// code which imports `os` without linking it still links: the type is Glibc's `pthread_mutex_t`
// (all zeros is `PTHREAD_MUTEX_INITIALIZER`) and every function is emitted into its caller, so
// nothing refers to a symbol of this module. `import os` also brings Glibc, as Apple's brings
// Darwin.

/// Apple's `os_unfair_lock`: a lock that must be unlocked by the thread that locked it.
/// `os_unfair_lock()` is an unlocked lock. Here a `pthread_mutex_t`; keep it at a stable address
/// (allocate it), as on Apple's systems.
public typealias os_unfair_lock = pthread_mutex_t

/// Apple's name for the lock's struct type.
public typealias os_unfair_lock_s = os_unfair_lock

/// Apple's pointer-to-lock type.
public typealias os_unfair_lock_t = UnsafeMutablePointer<os_unfair_lock>

/// Locks `lock`, waiting for it.
@_alwaysEmitIntoClient
public func os_unfair_lock_lock(_ lock: UnsafeMutablePointer<os_unfair_lock>) {
    pthread_mutex_lock(lock)
}

/// Locks `lock` if it is not locked; true when it was taken.
@_alwaysEmitIntoClient
public func os_unfair_lock_trylock(_ lock: UnsafeMutablePointer<os_unfair_lock>) -> Bool {
    pthread_mutex_trylock(lock) == 0
}

/// Unlocks `lock`, which the calling thread holds.
@_alwaysEmitIntoClient
public func os_unfair_lock_unlock(_ lock: UnsafeMutablePointer<os_unfair_lock>) {
    pthread_mutex_unlock(lock)
}

/// Apple traps when the calling thread does not hold `lock`; here it checks nothing.
@_alwaysEmitIntoClient
public func os_unfair_lock_assert_owner(_ lock: UnsafeMutablePointer<os_unfair_lock>) {}

/// Apple traps when the calling thread holds `lock`; here it checks nothing.
@_alwaysEmitIntoClient
public func os_unfair_lock_assert_not_owner(_ lock: UnsafeMutablePointer<os_unfair_lock>) {}
