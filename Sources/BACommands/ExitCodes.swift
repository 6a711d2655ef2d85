import BAExtensionHost

/// `ba`'s exit codes (documented in docs/cli.md).
package enum BAExitCode: Int32, CaseIterable, Sendable {
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
    /// The call's sandbox could not be set up; the extension was not loaded.
    case sandboxUnavailable = 18
    /// `ba fetch`: at least one download failed.
    case downloadFailed = 20
    /// `ba fetch`: interrupted (SIGINT) before every download ended; partial files are kept.
    case interrupted = 21
    /// `ba install`, `ba update`: `--timeout` passed before the extension's call or the essential
    /// downloads ended; they go on in basd.
    case waitTimedOut = 22
    /// Commands that talk to basd: it is not running (nothing listens on the socket) or refused
    /// the handshake.
    case daemonUnavailable = 30
    /// Commands that talk to basd: the connection broke mid-command (basd stopped or crashed).
    case daemonConnectionLost = 31
    /// `ba promote`, `ba cancel`: no active download has that unique identifier (basd's error 101).
    case downloadNotActive = 32
    /// Commands that talk to basd: basd answered with another error (printed with its code), or
    /// with a reply this `ba` does not expect.
    case daemonRefused = 33
    /// `ba install`, `update`, `simulate`: the app is registered, but basd did not call its extension
    /// (quarantined, background activity or in-app content off, no extension); the reason is printed.
    case extensionNotCalled = 34
    /// `ba service install`, `uninstall`: a file at a unit's path was not written by `ba service`
    /// (it lacks the marker line); it was left alone.
    case foreignUnitFile = 40
    /// `ba service install`, `uninstall`: the unit files were written or removed, but `systemctl
    /// --user` failed; what to run by hand is printed.
    case systemctlFailed = 41
    /// `ba demo`: a step failed, or an asset is missing or differs from what the server sent.
    case demoFailed = 42
    /// `ba pack build`: the manifest or its files cannot be packed (what is wrong is printed);
    /// `ba pack verify`: the publish folder has problems (each is printed).
    case packInvalid = 43
    /// Bad arguments (EX_USAGE).
    case usage = 64
    /// An input file is missing or unreadable (EX_NOINPUT).
    case noInput = 66
    /// The host itself failed, e.g. the runner could not start (EX_SOFTWARE).
    case hostFailure = 70
    /// A file or folder could not be created, written or removed (EX_CANTCREAT), e.g. a unit file.
    case cannotWrite = 73

    /// The code for an extension run's result.
    package static func code(for result: BAExtensionRunResult) -> BAExitCode {
        switch result.verdict {
        case .ok: result.rejected.isEmpty ? .ok : .downloadsRejected
        case .timedOut: .timedOut
        case .exceededMemory: .exceededMemory
        case .crashed: .crashed
        case .abiMismatch: .abiMismatch
        case .notALibrary: .notALibrary
        case .missingEntryPoint: .missingEntryPoint
        case .protocolError: .protocolError
        case .sandboxUnavailable: .sandboxUnavailable
        }
    }

    /// The code for a verdict that came by name (`BAExtensionVerdict.name`, in basd's reports);
    /// an unknown name (basd's `hostError`) is a host failure.
    static func code(forVerdictNamed name: String) -> BAExitCode {
        switch name {
        case "ok": .ok
        case "timedOut": .timedOut
        case "exceededMemory": .exceededMemory
        case "crashed": .crashed
        case "abiMismatch": .abiMismatch
        case "notALibrary": .notALibrary
        case "missingEntryPoint": .missingEntryPoint
        case "protocolError": .protocolError
        case "sandboxUnavailable": .sandboxUnavailable
        default: .hostFailure
        }
    }
}
