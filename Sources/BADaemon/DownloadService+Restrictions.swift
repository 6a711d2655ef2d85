import BADaemonProtocol
import BADownloadEngine
import BAExtensionHost
import BAExtensionProtocol
import BAStore
import Foundation

// The Info.plist restrictions that apply until the app's first launch (service queue).
extension DownloadService {
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
    func preLaunchRestriction(for record: DownloadRecord, of app: StoredApp) throws -> StoredDownload
        .PreLaunchRestriction?
    {
        let restrictions = app.restrictions
        if let allowList = restrictions.domainAllowList {
            // Parsed as the engine parses it (`DownloadRules` already accepted the URL).
            let host = ParsedURL(record.url)?.host ?? ""
            if !HostAllowList(allowList).allows(host: host) {
                throw Refusal(
                    ErrorCodes.sessionDownloadDisallowedByDomain,
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
                    ErrorCodes.downloadWouldExceedAllowance,
                    "\(app.bundleIdentifier) has not been launched yet: \"\(record.identifier)\" must declare its fileSize "
                        + "to be counted against \(key)")
            }
            guard used + size <= allowance else {
                throw Refusal(
                    ErrorCodes.downloadWouldExceedAllowance,
                    "\"\(record.identifier)\" (\(size) bytes) would exceed \(app.bundleIdentifier)'s \(key) of "
                        + "\(allowance) bytes before its first launch (\(max(0, allowance - used)) left)")
            }
        }
        let byteLimit: Int64? = allowance != nil ? size : nil
        guard byteLimit != nil || restrictions.domainAllowList != nil else { return nil }
        return StoredDownload.PreLaunchRestriction(byteLimit: byteLimit, allowList: restrictions.domainAllowList)
    }

    /// The app's first launch: its active downloads drop their byte limits and allow-lists in the
    /// running engine too (the store cleared them in ``BAStore/markLaunched(app:)``), keeping every
    /// byte already on disk.
    func liftRestrictions(of bundleIdentifier: String) {
        do {
            for download in try store.downloads(app: bundleIdentifier) where download.state.isActive {
                engine.liftRestrictions(download.uniqueIdentifier)
            }
        } catch {
            log("lifting the pre-launch restrictions of \(bundleIdentifier)'s downloads failed: \(error)")
        }
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
}
