internal import CBASystem

#if canImport(Glibc)
    import Glibc
#endif

/// What the host asked for on the runner's command line: how to confine the call
/// (`ba_sys_enter_call_jail`, docs/threat-model.md).
struct Jail {
    var parent: pid_t = 0
    var deadlineMilliseconds: Int64 = 0
    var sandbox = true
    var readPaths: [String] = []
    var writePaths: [String] = []
    var temporaryDirectory: String?
    var maximumProcesses: UInt64 = 0

    /// What loading a library and ordinary C and Swift code read, besides the extension's own
    /// folder, the runner's folder and every folder a library of this process was loaded from.
    /// Missing ones are skipped.
    static let systemReadPaths = [
        "/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/etc/ld.so.cache", "/etc/ld.so.conf",
        "/etc/ld.so.conf.d", "/etc/localtime", "/etc/timezone", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
        "/etc/ssl", "/etc/ca-certificates", "/etc/gai.conf", "/etc/host.conf", "/etc/hosts", "/proc",
        "/sys/devices/system/cpu", "/dev/zero", "/dev/urandom", "/dev/random",
    ]

    /// Parses `arguments` (without the program name); nil when there is no `--parent` (a runner
    /// started by hand is not confined). A malformed command line is a message.
    static func parse(_ arguments: [String]) -> Result<Jail?, JailError> {
        var jail = Jail()
        var index = 0
        while index < arguments.count {
            let flag = arguments[index]
            guard index + 1 < arguments.count else { return .failure(JailError("\(flag) needs a value")) }
            let value = arguments[index + 1]
            index += 2
            switch flag {
            case BA_RUNNER_ARG_PARENT:
                guard let parent = pid_t(value), parent > 0 else { return .failure(JailError("bad \(flag) \(value)")) }
                jail.parent = parent
            case BA_RUNNER_ARG_DEADLINE_MS:
                guard let milliseconds = Int64(value), milliseconds >= 0 else {
                    return .failure(JailError("bad \(flag) \(value)"))
                }
                jail.deadlineMilliseconds = milliseconds
            case BA_RUNNER_ARG_SANDBOX:
                guard value == "on" || value == "off" else { return .failure(JailError("bad \(flag) \(value)")) }
                jail.sandbox = value == "on"
            case BA_RUNNER_ARG_READ: jail.readPaths.append(value)
            case BA_RUNNER_ARG_WRITE: jail.writePaths.append(value)
            case BA_RUNNER_ARG_TEMPORARY: jail.temporaryDirectory = value
            case BA_RUNNER_ARG_MAX_PROCESSES:
                guard let count = UInt64(value) else { return .failure(JailError("bad \(flag) \(value)")) }
                jail.maximumProcesses = count
            default: return .failure(JailError("unknown argument \(flag)"))
            }
        }
        return .success(jail.parent == 0 ? nil : jail)
    }

    /// Enters the jail. Returns only in the worker process that makes the call; a failure is the
    /// layer that could not be set up and why.
    func enter() -> JailError? {
        var reads = readPaths + Self.systemReadPaths
        var loaded: [String] = []
        withUnsafeMutablePointer(to: &loaded) { pointer in
            ba_sys_visit_loaded_object_directories(
                { directory, context in
                    guard let directory, let context else { return }
                    context.assumingMemoryBound(to: [String].self).pointee.append(String(cString: directory))
                }, pointer)
        }
        // The runner's own folder and its prefix's lib folder: where a build or an installation
        // keeps libBackgroundAssets.so, which a Swift extension built outside the package loads
        // through its rpath. An extension's rpath itself is not trusted: it names whatever folder
        // the author likes.
        loaded += Installation.libraryDirectories()
        for directory in loaded where !reads.contains(directory) { reads.append(directory) }
        var writes = writePaths
        if let temporaryDirectory { writes.append(temporaryDirectory) }
        var message = [CChar](repeating: 0, count: 512)
        let status = withCStringArray(reads) { readPointers in
            withCStringArray(writes) { writePointers in
                var jail = ba_call_jail(
                    expected_parent: parent, deadline_ms: deadlineMilliseconds, namespaces: 1,
                    sandbox: sandbox ? 1 : 0, read_paths: readPointers, read_count: reads.count,
                    write_paths: writePointers, write_count: writes.count, max_processes: maximumProcesses)
                return ba_sys_enter_call_jail(&jail, &message, message.count)
            }
        }
        guard status == 0 else {
            return JailError(String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        // Temporary files of the call go to its own folder, the one writable place besides the container.
        if let temporaryDirectory { setenv("TMPDIR", temporaryDirectory, 1) }
        return nil
    }
}

/// Why the runner could not be confined.
struct JailError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// Calls `body` with a NULL-terminated array of C copies of `strings`.
func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    var pointers: [UnsafePointer<CChar>?] = strings.map { UnsafePointer(strdup($0)) }
    pointers.append(nil)
    defer { for pointer in pointers { free(UnsafeMutablePointer(mutating: pointer)) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
