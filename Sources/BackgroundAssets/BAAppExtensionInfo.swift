import Foundation

/// What the system tells an extension about its app's download allowances.
///
/// Before the app is first launched, downloads are bounded by the app's Info.plist allowances;
/// these report what is left. After first launch both are nil (no restriction).
public final class BAAppExtensionInfo: NSObject, NSSecureCoding, Sendable {
    /// Bytes left of the non-essential download allowance, or nil when unrestricted.
    public let restrictedDownloadSizeRemaining: Int?
    /// Bytes left of the essential download allowance, or nil when unrestricted.
    public let restrictedEssentialDownloadSizeRemaining: Int?

    /// Creates an info value (the system does this; tests may too).
    public init(restrictedDownloadSizeRemaining: Int?, restrictedEssentialDownloadSizeRemaining: Int?) {
        self.restrictedDownloadSizeRemaining = restrictedDownloadSizeRemaining
        self.restrictedEssentialDownloadSizeRemaining = restrictedEssentialDownloadSizeRemaining
    }

    private static let remainingKey = "restrictedDownloadSizeRemaining"
    private static let essentialRemainingKey = "restrictedEssentialDownloadSizeRemaining"

    /// Decodes only as this class (`NSSecureCoding`).
    public static var supportsSecureCoding: Bool { true }

    /// Encodes the allowances (a nil one is left out).
    public func encode(with coder: NSCoder) {
        if let remaining = restrictedDownloadSizeRemaining { coder.encode(remaining, forKey: Self.remainingKey) }
        if let remaining = restrictedEssentialDownloadSizeRemaining {
            coder.encode(remaining, forKey: Self.essentialRemainingKey)
        }
    }

    /// Decodes the allowances encoded by ``encode(with:)``.
    public init?(coder: NSCoder) {
        restrictedDownloadSizeRemaining =
            coder.containsValue(forKey: Self.remainingKey) ? coder.decodeInteger(forKey: Self.remainingKey) : nil
        restrictedEssentialDownloadSizeRemaining =
            coder.containsValue(forKey: Self.essentialRemainingKey)
            ? coder.decodeInteger(forKey: Self.essentialRemainingKey) : nil
        super.init()
    }
}

/// The WWDC22 seed's name for ``BAAppExtensionInfo``.
@available(*, deprecated, renamed: "BAAppExtensionInfo")
public typealias BAApplicationExtensionInfo = BAAppExtensionInfo
