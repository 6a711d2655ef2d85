import BAExtensionHost

/// `ba`'s exit codes (documented in docs/cli.md).
public enum BAExitCode: Int32, CaseIterable, Sendable {
    case ok = 0
    /// The call returned, but the host rejected some of its downloads.
    case downloadsRejected = 10
    case timedOut = 11
    case exceededMemory = 12
    case crashed = 13
    case abiMismatch = 14
    case notALibrary = 15
    case missingEntryPoint = 16
    case protocolError = 17
    /// `ba fetch`: at least one download failed.
    case downloadFailed = 20
    /// `ba fetch`: interrupted (SIGINT) before every download ended; partial files are kept.
    case interrupted = 21
    /// Bad arguments (EX_USAGE).
    case usage = 64
    /// An input file is missing or unreadable (EX_NOINPUT).
    case noInput = 66
    /// The host itself failed, e.g. the runner could not start (EX_SOFTWARE).
    case hostFailure = 70

    /// The code for a run's result.
    /// The code for an extension run's result.
    public static func code(for result: BAExtensionRunResult) -> BAExitCode {
        switch result.verdict {
        case .ok: result.rejected.isEmpty ? .ok : .downloadsRejected
        case .timedOut: .timedOut
        case .exceededMemory: .exceededMemory
        case .crashed: .crashed
        case .abiMismatch: .abiMismatch
        case .notALibrary: .notALibrary
        case .missingEntryPoint: .missingEntryPoint
        case .protocolError: .protocolError
        }
    }
}
