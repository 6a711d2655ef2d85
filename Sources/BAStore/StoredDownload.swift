import BACore
import Foundation

/// A download as ``BAStore`` keeps it: one row of the `download` table.
///
/// The shared ``DownloadDescription`` of what the app asked for (identifier, URL, headers, sizes,
/// priority, and its state), plus the row's own bookkeeping: the app it belongs to, where the
/// transfer stands (bytes on disk, validator, partial file) and how it ended. The description's
/// fields read as the row's own (`row.identifier` is `row.download.identifier`); a restarted basd rebuilds its
/// transfers from these rows. The store sets ``createdAt`` and ``updatedAt``.
@dynamicMemberLookup
package struct StoredDownload: Sendable, Hashable {
    /// What the app asked for, and its state (its ``DownloadDescription/uniqueIdentifier`` is
    /// always set here: the primary key).
    package var download: DownloadDescription

    /// A field of ``download``.
    package subscript<Value>(dynamicMember field: WritableKeyPath<DownloadDescription, Value>) -> Value {
        get { download[keyPath: field] }
        set { download[keyPath: field] = newValue }
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

    /// The bundle identifier of the app the download belongs to.
    package var appIdentifier: String
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
        headers: [DownloadDescription.Header] = [], applicationGroupIdentifier: String? = nil,
        priority: Int64 = DownloadRules.defaultPriority, isEssential: Bool = false, expectedSize: Int64? = nil,
        sha256: String? = nil, state: DownloadState = .waiting, isForeground: Bool = false, bytesOnDisk: Int64 = 0,
        validator: String? = nil, partialPath: String? = nil, destinationPath: String? = nil, attempts: Int = 0,
        lastError: Failure? = nil, createdAt: Date = Date(timeIntervalSince1970: 0),
        updatedAt: Date = Date(timeIntervalSince1970: 0), restriction: PreLaunchRestriction? = nil
    ) {
        self.download = DownloadDescription(
            identifier: identifier, uniqueIdentifier: uniqueIdentifier, url: url, headers: headers,
            applicationGroupIdentifier: applicationGroupIdentifier, priority: priority, isEssential: isEssential,
            fileSize: expectedSize ?? 0, sha256: sha256, state: state)
        self.appIdentifier = appIdentifier
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

    /// A new download of `app` as an extension or the app described it (already checked with
    /// ``DownloadRules``): an empty `uniqueIdentifier` gets a fresh UUID.
    package init(_ download: DownloadDescription, appIdentifier: String, state: DownloadState = .waiting) {
        var download = download
        if download.uniqueIdentifier.isEmpty { download.uniqueIdentifier = UUID().uuidString }
        download.state = state
        download.isWellFormed = true
        self.download = download
        self.appIdentifier = appIdentifier
        self.isForeground = false
        self.bytesOnDisk = 0
        self.attempts = 0
        self.createdAt = Date(timeIntervalSince1970: 0)
        self.updatedAt = Date(timeIntervalSince1970: 0)
    }

    /// `BADownload.uniqueIdentifier` (a UUID string): the primary key.
    package var uniqueIdentifier: String {
        get { download.uniqueIdentifier }
        set { download.uniqueIdentifier = newValue }
    }

    /// Where the download stands.
    package var state: DownloadState {
        get { download.state }
        set { download.state = newValue }
    }

    /// The exact size the file must have, if known.
    package var expectedSize: Int64? {
        get { download.expectedSize }
        set { download.fileSize = newValue ?? 0 }
    }
}
