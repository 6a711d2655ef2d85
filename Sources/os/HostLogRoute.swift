#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// During an extension call, log lines go to the host's log (BackgroundAssets'
/// `ba_os_log_to_host`), which shows them in `ba run-extension`'s report and writes them to basd's
/// log with their level; the extension's own stderr reaches neither. The entry is found at run
/// time, so `os` does not depend on BackgroundAssets.
///
/// The lookup is written in Swift, with no C module of its own: any package built next to this
/// module may `import os` (see `UnfairLock.swift`), and a C module would have to be found by
/// its compiler too.
enum HostLogRoute {
    typealias Function = @convention(c) (Int32, UnsafePointer<CChar>) -> Bool

    static let function: Function? = find()

    /// Sends `line` to the host's log at `level` (`BAHostLogLevel`); false when no extension call
    /// is active (or BackgroundAssets is not loaded).
    static func send(_ level: Int32, _ line: String) -> Bool {
        guard let function else { return false }
        return line.withCString { function(level, $0) }
    }

    /// `ba_os_log_to_host` in the object that holds this code and its dependencies (an extension
    /// built in one package has BackgroundAssets linked into its own library, which the runner
    /// loads `RTLD_LOCAL`, out of a global lookup's reach), then in an already loaded
    /// `libBackgroundAssets.so`; nil when neither has it. Loads nothing.
    private static func find() -> Function? {
        if let path = objectHoldingThisCode(), let found = lookUp(in: path) {
            return found
        }
        return lookUp(in: "libBackgroundAssets.so")
    }

    private static func lookUp(in object: String) -> Function? {
        // RTLD_NOLOAD only takes a reference to an object already loaded; it is kept, as the
        // function is.
        guard let handle = dlopen(object, RTLD_NOW | RTLD_NOLOAD),
            let symbol = dlsym(handle, "ba_os_log_to_host")
        else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }

    /// The path of the shared object (or executable) this code was linked into, by `dladdr`.
    /// Glibc declares `dladdr` only with `_GNU_SOURCE`, which Swift's Glibc module is built
    /// without, so it is found with `dlsym` like any other symbol.
    private static func objectHoldingThisCode() -> String? {
        typealias DladdrFunction = @convention(c) (UnsafeRawPointer?, UnsafeMutableRawPointer) -> Int32
        guard let dladdrSymbol = dlsym(nil, "dladdr") else { return nil }
        let dladdr = unsafeBitCast(dladdrSymbol, to: DladdrFunction.self)
        let here: @convention(c) () -> Void = {}
        // Dl_info: dli_fname, dli_fbase, dli_sname, dli_saddr.
        var info: (UnsafePointer<CChar>?, UnsafeRawPointer?, UnsafePointer<CChar>?, UnsafeRawPointer?) =
            (nil, nil, nil, nil)
        let found = withUnsafeMutableBytes(of: &info) { buffer in
            dladdr(unsafeBitCast(here, to: UnsafeRawPointer.self), buffer.baseAddress!)
        }
        guard found != 0, let name = info.0 else { return nil }
        return String(cString: name)
    }
}
