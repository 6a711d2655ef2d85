import Foundation

/// What the system tells an extension about its app's download allowances.
///
/// Before the app is first launched, downloads are bounded by the app's Info.plist allowances;
/// these report what is left. After first launch both are nil (no restriction).
public final class BAAppExtensionInfo: NSObject, Sendable {
    /// Bytes left of the non-essential download allowance, or nil when unrestricted.
    public let restrictedDownloadSizeRemaining: Int?
    /// Bytes left of the essential download allowance, or nil when unrestricted.
    public let restrictedEssentialDownloadSizeRemaining: Int?

    /// Creates an info value (the system does this; tests may too).
    public init(restrictedDownloadSizeRemaining: Int?, restrictedEssentialDownloadSizeRemaining: Int?) {
        self.restrictedDownloadSizeRemaining = restrictedDownloadSizeRemaining
        self.restrictedEssentialDownloadSizeRemaining = restrictedEssentialDownloadSizeRemaining
    }
}
