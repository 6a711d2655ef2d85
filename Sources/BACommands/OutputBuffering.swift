import Foundation

/// How `ba` writes its standard output.
package enum OutputBuffering {
    /// Makes standard output line-buffered when it is not a terminal (a pipe, a file, the
    /// journal), so each line is written when printed: a package hook killed mid-install still
    /// leaves what it printed, and `ba events --follow | grep …` sees events as they happen.
    /// (The C library block-buffers a pipe by default.) Call first thing in `main`.
    package static func lineBufferWhenPiped() {
        guard isatty(STDOUT_FILENO) == 0 else { return }
        // `stdout` is a mutable C global, which Swift 6 does not let code read; its address is
        // the one the dynamic linker has for the symbol (RTLD_DEFAULT is the null handle on glibc).
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "stdout"),
            let file = symbol.assumingMemoryBound(to: UnsafeMutablePointer<FILE>?.self).pointee
        else { return }
        setvbuf(file, nil, _IOLBF, 0)
    }
}
