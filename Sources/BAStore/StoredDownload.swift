import BACore
import Foundation

/// A download as ``BAStore`` keeps it: one row of the `download` table.
///
/// Plain data: what the app asked for (identifier, URL, headers, sizes, priority), where the
/// transfer stands (state, bytes on disk, validator, partial file) and how it ended. A restarted
/// basd rebuilds its transfers from these rows. The store sets ``createdAt`` and ``updatedAt``.
package struct StoredDownload: Sendable, Hashable {
    /// `BADownload.State`, with Apple's raw values.
    package enum State: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        case failed = -1
        case created = 0
        case waiting = 1
        case downloading = 2
        case finished = 3

        /// Created, waiting or downloading: the download is scheduled and will go on after a
        /// restart. At most one active download per (app, identifier).
        package var isActive: Bool { self != .failed && self != .finished }

        package var description: String {
            switch self {
            case .failed: "failed"
            case .created: "created"
            case .waiting: "waiting"
            case .downloading: "downloading"
            case .finished: "finished"
            }
        }
    }

    /// The error a failed download ended with: an `NSError`'s three parts.
    package struct Failure: Sendable, Hashable {
        /// The error domain, e.g. `com.apple.backgroundassets.error`.
        package var domain: String
        /// The code within the domain.
        package var code: Int
        /// What happened, for a person.
        package var message: String

        /// Creates a failure.
        package init(domain: String, code: Int, message: String) {
            self.domain = domain
            self.code = code
            self.message = message
        }
    }

    /// `BADownload.uniqueIdentifier` (a UUID string): the primary key.
    package var uniqueIdentifier: String
    /// The bundle identifier of the app the download belongs to.
    package var appIdentifier: String
    /// `BADownload.identifier`, chosen by the app; unique among the app's active downloads.
    package var identifier: String
    /// The URL to fetch.
    package var url: String
    /// The request's headers, in order.
    package var headers: [DownloadRecord.Header]
    /// The app group the finished file is delivered into, if any.
    package var applicationGroupIdentifier: String?
    /// `BADownload.Priority` raw value: higher first, among background downloads.
    package var priority: Int64
    /// Essential downloads go before all others and are fetched before the app can launch.
    package var isEssential: Bool
    /// The exact size the file must have, if known.
    package var expectedSize: Int64?
    /// The lowercase hex SHA-256 the file must have, if known (a Linux addition).
    package var sha256: String?
    /// Where the download stands.
    package var state: State
    /// Whether the app asked for it in the foreground (`startForegroundDownload`).
    package var isForeground: Bool
    /// Bytes of the partial file kept on disk (of the finished file, once finished).
    package var bytesOnDisk: Int64
    /// The response's validator (strong ETag, else Last-Modified) the partial file's bytes belong
    /// to; a partial file without one is never resumed.
    package var validator: String?
    /// Where the partial file is.
    package var partialPath: String?
    /// Where the finished file is (set when finished).
    package var destinationPath: String?
    /// How many times a transfer of it has begun.
    package var attempts: Int
    /// The last error: why it failed, once failed.
    package var lastError: Failure?
    /// When it was scheduled.
    package var createdAt: Date
    /// When it last changed.
    package var updatedAt: Date
    /// Scheduled before the app's first launch: the pre-launch restrictions that travel with the
    /// transfer (nil after launch).
    package var restriction: PreLaunchRestriction?

    /// What a download scheduled before the app's first launch carries to its transfer: the
    /// bytes it may have (its share of the allowance) and the domain allow-list every redirect
    /// hop must stay in.
    package struct PreLaunchRestriction: Sendable, Hashable, Codable {
        /// The most bytes the file may have, if limited.
        package var byteLimit: Int64?
        /// `BADownloadDomainAllowList`, if the app has one.
        package var allowList: [String]?

        package init(byteLimit: Int64? = nil, allowList: [String]? = nil) {
            self.byteLimit = byteLimit
            self.allowList = allowList
        }
    }

    /// Creates a download to pass to ``BAStore/schedule(_:)``.
    package init(
        uniqueIdentifier: String = UUID().uuidString, appIdentifier: String, identifier: String, url: String,
        headers: [DownloadRecord.Header] = [], applicationGroupIdentifier: String? = nil,
        priority: Int64 = DownloadRules.defaultPriority, isEssential: Bool = false, expectedSize: Int64? = nil,
        sha256: String? = nil, state: State = .waiting, isForeground: Bool = false, bytesOnDisk: Int64 = 0,
        validator: String? = nil, partialPath: String? = nil, destinationPath: String? = nil, attempts: Int = 0,
        lastError: Failure? = nil, createdAt: Date = Date(timeIntervalSince1970: 0),
        updatedAt: Date = Date(timeIntervalSince1970: 0), restriction: PreLaunchRestriction? = nil
    ) {
        self.uniqueIdentifier = uniqueIdentifier
        self.appIdentifier = appIdentifier
        self.identifier = identifier
        self.url = url
        self.headers = headers
        self.applicationGroupIdentifier = applicationGroupIdentifier
        self.priority = priority
        self.isEssential = isEssential
        self.expectedSize = expectedSize
        self.sha256 = sha256
        self.state = state
        self.isForeground = isForeground
        self.bytesOnDisk = bytesOnDisk
        self.validator = validator
        self.partialPath = partialPath
        self.destinationPath = destinationPath
        self.attempts = attempts
        self.lastError = lastError
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.restriction = restriction
    }

    /// A new download of `app` from a record an extension or the app handed over (already checked
    /// with ``DownloadRules``): a `fileSize` of 0 means unknown; an empty `uniqueIdentifier` gets
    /// a fresh UUID.
    package init(record: DownloadRecord, appIdentifier: String, state: State = .waiting) {
        self.init(
            uniqueIdentifier: record.uniqueIdentifier.isEmpty ? UUID().uuidString : record.uniqueIdentifier,
            appIdentifier: appIdentifier, identifier: record.identifier, url: record.url, headers: record.headers,
            applicationGroupIdentifier: record.applicationGroupIdentifier, priority: record.priority,
            isEssential: record.isEssential, expectedSize: record.fileSize > 0 ? record.fileSize : nil,
            sha256: record.sha256, state: state)
    }
}
