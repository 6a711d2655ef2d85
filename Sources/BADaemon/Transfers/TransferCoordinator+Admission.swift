import BACore
import BADaemonProtocol
import BADownloadEngine
import BAStore
import Foundation

// Which downloads are accepted, and what the Info.plist restrictions make them keep to until the
// app's first launch (executor).
extension TransferCoordinator {
    /// Checks, stores (durably) and queues a download of `app`. `contentRequest` as in
    /// `DownloadRules.check`: 0 for an app's own call (no essential downloads), nil from an
    /// extension outside `downloads(for:)`.
    ///
    /// - Parameter start: hand it to the engine now; false inside a ``BAStore/batch(_:_:)``, whose
    ///   caller calls ``start(_:)`` once the batch is committed (nothing is fetched for a row that
    ///   a failed commit took back).
    @discardableResult
    func schedule(
        _ payload: DownloadDescription, for app: StoredApp, contentRequest: Int32?, start: Bool = true
    ) throws -> StoredDownload {
        guard let appGroup = app.appGroupIdentifier else {
            throw Refusal(
                AppleErrorCode.downloadInvalid.rawValue,
                "\(app.bundleIdentifier) has no app group (BAAppGroupID); finished files are delivered into the app group container"
            )
        }
        let group = payload.applicationGroupIdentifier ?? appGroup
        guard group == appGroup else {
            throw Refusal(
                AppleErrorCode.downloadInvalid.rawValue,
                "download \"\(payload.identifier)\" names app group \"\(group)\", but \(app.bundleIdentifier) belongs to \"\(appGroup)\""
            )
        }
        var record = payload
        if record.uniqueIdentifier.isEmpty { record.uniqueIdentifier = UUID().uuidString }
        if let violation = DownloadRules.checkIdentifier(record.uniqueIdentifier, what: "unique identifier") {
            throw Refusal(AppleErrorCode.downloadInvalid.rawValue, violation.reason)
        }
        record.applicationGroupIdentifier = group
        record.sha256 = record.sha256?.lowercased()
        if let violation = DownloadRules.check(record, contentRequest: contentRequest) {
            throw Refusal(violation.code, violation.reason)
        }
        let settings = settings()
        if contentRequest != 0, !settings.backgroundActivity {
            throw Refusal(
                AppleErrorCode.downloadBackgroundActivityProhibited.rawValue,
                "background activity is off in basd's settings (backgroundActivity); the app can schedule \"\(record.identifier)\" itself while it runs"
            )
        }
        if record.isEssential, !settings.inAppContent {
            throw Refusal(
                AppleErrorCode.downloadEssentialDownloadNotPermitted.rawValue,
                "in-app content is off in basd's settings (inAppContent): no essential downloads")
        }
        var download = StoredDownload(record, appIdentifier: app.bundleIdentifier)
        if !app.launched {
            download.restriction = try preLaunchRestriction(for: record, of: app)
        }
        let stored = try store.schedule(download, chargingAllowance: !app.launched)
        if start { self.start(stored) }
        return stored
    }

    /// Hands a stored download to the engine, or leaves it in the store for later: the engine
    /// holds a window of the queue (``BasdServices/Configuration/engineWindow`` background
    /// downloads), not the whole of it, so 100,000 queued downloads cost rows, not transfers
    /// (``TransferWindow`` decides).
    func start(_ stored: StoredDownload) {
        perform(window.handle(.scheduled(.init(stored))), row: stored)
    }

    /// Checks a download scheduled before the app's first launch against the app's
    /// `BAInitialDownloadRestrictions` and returns what its transfer must keep to.
    ///
    /// - Declared sizes count against `BADownloadAllowance` (non-essential) or
    ///   `BAEssentialDownloadAllowance` (essential): past it, 112. A non-essential download without
    ///   a size cannot be counted, so it is refused (112) while an allowance applies.
    /// - The URL's host must be in `BADownloadDomainAllowList` (202); the transfer checks every
    ///   redirect hop too.
    /// - The transfer may not exceed the declared size: a server declaring more fails it with 203,
    ///   one sending more with 204.
    func preLaunchRestriction(
        for record: DownloadDescription, of app: StoredApp
    ) throws
        -> StoredDownload.PreLaunchRestriction?
    {
        let restrictions = app.restrictions
        if let allowList = restrictions.domainAllowList {
            // Parsed as the engine parses it (`DownloadRules` already accepted the URL).
            let host = ParsedURL(record.url)?.host ?? ""
            if !HostAllowList(allowList).allows(host: host) {
                throw Refusal(
                    AppleErrorCode.sessionDownloadDisallowedByDomain.rawValue,
                    "\(app.bundleIdentifier) has not been launched yet, and host \"\(host)\" of \"\(record.identifier)\" "
                        + "is not in BADownloadDomainAllowList (\(allowList.joined(separator: ", ")))")
            }
        }
        let size = record.fileSize
        let allowance = record.isEssential ? restrictions.essentialDownloadAllowance : restrictions.downloadAllowance
        let used = record.isEssential ? app.essentialAllowanceUsed : app.allowanceUsed
        let key = record.isEssential ? "BAEssentialDownloadAllowance" : "BADownloadAllowance"
        if let allowance {
            guard size > 0 else {
                throw Refusal(
                    AppleErrorCode.downloadWouldExceedAllowance.rawValue,
                    "\(app.bundleIdentifier) has not been launched yet: \"\(record.identifier)\" must declare its fileSize "
                        + "to be counted against \(key)")
            }
            guard used + size <= allowance else {
                throw Refusal(
                    AppleErrorCode.downloadWouldExceedAllowance.rawValue,
                    "\"\(record.identifier)\" (\(size) bytes) would exceed \(app.bundleIdentifier)'s \(key) of "
                        + "\(allowance) bytes before its first launch (\(max(0, allowance - used)) left)")
            }
        }
        let byteLimit: Int64? = allowance != nil ? size : nil
        guard byteLimit != nil || restrictions.domainAllowList != nil else { return nil }
        return StoredDownload.PreLaunchRestriction(byteLimit: byteLimit, allowList: restrictions.domainAllowList)
    }

    /// `BAAppExtensionInfo` for a call made now: what is left of the pre-launch allowances, nil
    /// once the app has launched or when it declares none.
    func remainingAllowances(of app: StoredApp) -> (nonEssential: Int64?, essential: Int64?) {
        guard !app.launched else { return (nil, nil) }
        return (
            app.restrictions.downloadAllowance.map { max(0, $0 - app.allowanceUsed) },
            app.restrictions.essentialDownloadAllowance.map { max(0, $0 - app.essentialAllowanceUsed) }
        )
    }

    /// Cancels what an extension's `ok` call cancelled through `BADownloadManager.cancel` (an event
    /// wake or a content request); returns the identifiers cancelled. One that ended meanwhile is
    /// logged and skipped.
    @discardableResult
    func applyCancellations(_ identifiers: [String], of app: String) -> [String] {
        var cancelled: [String] = []
        for identifier in identifiers {
            do {
                try cancel(app: app, identifier: identifier, by: "the extension")
                cancelled.append(identifier)
                log("the extension of \(app) cancelled \"\(identifier)\"")
            } catch {
                log("the extension of \(app) cancelled \"\(identifier)\": \(error)")
            }
        }
        return cancelled
    }
}
