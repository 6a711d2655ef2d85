import Foundation

/// One call of an app's extension and how it ended: one row of the `extension_run` table.
///
/// The history basd's budgets read (daily runtime allowance, quarantine of an extension that
/// crashes repeatedly) and `ba` shows.
package struct StoredExtensionRun: Sendable, Hashable {
    /// Why the extension was called.
    package enum Event: String, Sendable, Hashable, CaseIterable {
        /// `BAContentRequest.install`.
        case install
        /// `BAContentRequest.update`.
        case update
        /// `BAContentRequest.periodic`.
        case periodic
        /// `BAContentRequest.languageChange`.
        case languageChange
        /// `backgroundDownload(_:finishedWithFileURL:)`.
        case finished
        /// `backgroundDownload(_:failedWithError:)`.
        case failed
        /// `backgroundDownload(_:didReceive:)`.
        case challenge
        /// `ManagedDownloaderExtension.shouldDownload(_:)`, for the packs of an install or update (v6).
        case shouldDownload
    }

    /// The row's id (assigned by the store; ignored by ``BAStore/recordExtensionRun(_:)``).
    package var id: Int64
    /// The bundle identifier of the app whose extension ran.
    package var appIdentifier: String
    /// Why it was called.
    package var event: Event
    /// The supervisor's verdict by name: `ok`, `timedOut`, `exceededMemory`, `crashed`, … .
    package var verdict: String
    /// More about the verdict for a person (the signal, the runner's message), if any.
    package var detail: String?
    /// When the call started.
    package var startedAt: Date
    /// How long it took, in milliseconds.
    package var durationMilliseconds: Int64

    /// Creates a run to pass to ``BAStore/recordExtensionRun(_:)``.
    package init(
        id: Int64 = 0, appIdentifier: String, event: Event, verdict: String, detail: String? = nil, startedAt: Date,
        durationMilliseconds: Int64
    ) {
        self.id = id
        self.appIdentifier = appIdentifier
        self.event = event
        self.verdict = verdict
        self.detail = detail
        self.startedAt = startedAt
        self.durationMilliseconds = durationMilliseconds
    }
}
