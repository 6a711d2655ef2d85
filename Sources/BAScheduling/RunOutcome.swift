/// How an extension run ended, as far as quarantine is concerned.
///
/// basd maps each call verdict to one of these: `ok` → ``ok``; `crashed(signal)` → ``crashed(_:)``;
/// `timedOut` → ``timedOut(_:)``; `exceededMemory`, `abiMismatch`, `notALibrary`,
/// `missingEntryPoint` and anything else → ``otherFailure(_:)``. Each detail is a short phrase for
/// the quarantine reason, e.g. `"signal 11"` or `"no answer in 30 s"`.
package enum RunOutcome: Codable, Sendable, Equatable {
    /// The call returned.
    case ok
    /// The runner process died of a signal or a trap; the detail says which.
    case crashed(String)
    /// The call passed its deadline and the runner was killed; the detail says which deadline.
    case timedOut(String)
    /// Any other failure. It neither counts toward quarantine nor resets the count: a missing
    /// entry point or an ABI mismatch is refused before the extension's code runs, so it says
    /// nothing about whether that code crashes.
    case otherFailure(String)
}
