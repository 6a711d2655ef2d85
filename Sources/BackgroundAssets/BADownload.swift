import Foundation

/// An asset download, the common base of ``BAURLDownload``.
///
/// Downloads are immutable values with reference identity (as in Apple's framework): two
/// downloads are equal when they have the same ``uniqueIdentifier``; ``copy()`` keeps it.
/// ``identifier`` is what an app chooses and must be unique among the app's downloads.
open class BADownload: NSObject, NSCopying, @unchecked Sendable {
    /// Where a download is in its life.
    public enum State: Int, Sendable, CaseIterable {
        case failed = -1
        case created = 0
        case waiting = 1
        case downloading = 2
        case finished = 3
    }

    /// How urgently the system should fetch a download relative to the app's others; a higher
    /// value is more important.
    public struct Priority: RawRepresentable, Hashable, Comparable, Sendable {
        public let rawValue: Int
        /// Creates a priority from an integer.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Creates a priority from an integer.
        public init(_ rawValue: Int) { self.rawValue = rawValue }
        /// The lowest priority (0).
        public static let min = Priority(0)
        /// The default priority (50).
        public static let `default` = Priority(50)
        /// The highest priority (100).
        public static let max = Priority(100)
        public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The app-chosen identifier: non-empty, no `/`, no `..`, no NUL.
    public let identifier: String
    /// A system-assigned identifier that distinguishes this download from any other.
    public let uniqueIdentifier: String
    /// The download's state when this object was produced.
    public let state: State
    /// The download's priority.
    public let priority: Priority
    /// Whether the download is essential: fetched before the app can first launch.
    public let isEssential: Bool
    /// The app group whose container receives the finished file.
    public let applicationGroupIdentifier: String

    init(
        identifier: String, uniqueIdentifier: String, state: State, priority: Priority, isEssential: Bool,
        applicationGroupIdentifier: String
    ) {
        self.identifier = identifier
        self.uniqueIdentifier = uniqueIdentifier
        self.state = state
        self.priority = priority
        self.isEssential = isEssential
        self.applicationGroupIdentifier = applicationGroupIdentifier
    }

    /// A copy of this download that is not essential, e.g. to re-queue a failed essential
    /// download in the background.
    open func removingEssential() -> Self {
        fatalError("BADownload is abstract: subclasses such as BAURLDownload implement removingEssential()")
    }

    open func copy(with zone: NSZone? = nil) -> Any {
        fatalError("BADownload is abstract: subclasses such as BAURLDownload implement copy(with:)")
    }

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? BADownload else { return false }
        return other.uniqueIdentifier == uniqueIdentifier
    }

    open override var hash: Int { uniqueIdentifier.hashValue }

    open override var description: String {
        "<\(type(of: self)) \(identifier) state=\(state) priority=\(priority.rawValue)\(isEssential ? " essential" : "")>"
    }
}
