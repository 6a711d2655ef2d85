/// How one call into an extension ended. Every call gets exactly one.
public enum BAExtensionVerdict: Equatable, Sendable, CustomStringConvertible {
    /// The entry point returned.
    case ok
    /// The call passed its deadline and the process group was killed.
    case timedOut
    /// The extension ran out of memory under its cap (allocation failed at the cap, or the Swift
    /// runtime reported an allocation failure).
    case exceededMemory
    /// The process died of a signal (SIGSEGV, SIGABRT, …) for another reason.
    case crashed(signal: Int32)
    /// The library's C ABI version is not one this host speaks.
    case abiMismatch(found: String, expected: String)
    /// The file could not be loaded as a shared library.
    case notALibrary(reason: String)
    /// No `ba_extension_descriptor`, or the entry point for this event is not implemented.
    case missingEntryPoint(reason: String)
    /// The runner or the extension broke the protocol (garbage on the socket, exited mid-call).
    case protocolError(reason: String)
    /// The call's sandbox could not be set up (the reason names the layer: namespaces, Landlock,
    /// seccomp, …), so the extension was not loaded. Turning the sandbox off runs it anyway.
    case sandboxUnavailable(reason: String)

    /// A stable name: `ok`, `timedOut`, `exceededMemory`, `crashed`, `abiMismatch`,
    /// `notALibrary`, `missingEntryPoint`, `protocolError`, `sandboxUnavailable`.
    public var name: String {
        switch self {
        case .ok: "ok"
        case .timedOut: "timedOut"
        case .exceededMemory: "exceededMemory"
        case .crashed: "crashed"
        case .abiMismatch: "abiMismatch"
        case .notALibrary: "notALibrary"
        case .missingEntryPoint: "missingEntryPoint"
        case .protocolError: "protocolError"
        case .sandboxUnavailable: "sandboxUnavailable"
        }
    }

    /// Details for a person: the signal, the versions or the reason.
    public var detail: String? {
        switch self {
        case .ok, .timedOut, .exceededMemory: nil
        case .crashed(let signal): "signal \(signal) (\(signalName(signal)))"
        case .abiMismatch(let found, let expected): "found C ABI \(found), expected \(expected)"
        case .notALibrary(let reason), .missingEntryPoint(let reason), .protocolError(let reason),
            .sandboxUnavailable(let reason):
            reason
        }
    }

    public var description: String { detail.map { "\(name): \($0)" } ?? name }
}

/// A signal's conventional name.
func signalName(_ signal: Int32) -> String {
    switch signal {
    case 1: "SIGHUP"
    case 2: "SIGINT"
    case 4: "SIGILL"
    case 5: "SIGTRAP"
    case 6: "SIGABRT"
    case 7: "SIGBUS"
    case 8: "SIGFPE"
    case 9: "SIGKILL"
    case 11: "SIGSEGV"
    case 13: "SIGPIPE"
    case 15: "SIGTERM"
    default: "signal \(signal)"
    }
}
