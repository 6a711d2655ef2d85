import Foundation

/// An asset download, the common base of ``BAURLDownload``.
///
/// Downloads are immutable values with reference identity (as in Apple's framework): two
/// downloads are equal when they have the same ``uniqueIdentifier``; ``copy()`` keeps it.
/// ``identifier`` is what an app chooses and must be unique among the app's downloads.
///
/// Downloads conform to `NSSecureCoding`, as Apple's do: `NSKeyedArchiver` round trips keep every
/// property (``BAURLDownload`` keeps its request's URL, method and header fields).
open class BADownload: NSObject, NSCopying, NSSecureCoding, @unchecked Sendable {
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
        /// The lowest of the named priorities (0 here; Apple's value is not published, see
        /// docs/apple-api-compatibility.md). Any `Int` is accepted, as Apple's `init(_:)` documents.
        public static let min = Priority(0)
        /// The default priority (50 here).
        public static let `default` = Priority(50)
        /// The highest of the named priorities (100 here).
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
    /// download in the background. As on Apple's system it is a copy with only the necessity
    /// changed: ``uniqueIdentifier``, ``state`` and ``priority`` are kept.
    open func removingEssential() -> Self {
        fatalError("BADownload is abstract: subclasses such as BAURLDownload implement removingEssential()")
    }

    private enum Key {
        static let identifier = "identifier"
        static let uniqueIdentifier = "uniqueIdentifier"
        static let state = "state"
        static let priority = "priority"
        static let isEssential = "isEssential"
        static let applicationGroupIdentifier = "applicationGroupIdentifier"
    }

    /// Downloads decode only as the classes they were encoded as (`NSSecureCoding`).
    open class var supportsSecureCoding: Bool { true }

    /// Encodes the download's properties.
    open func encode(with coder: NSCoder) {
        coder.encode(identifier as NSString, forKey: Key.identifier)
        coder.encode(uniqueIdentifier as NSString, forKey: Key.uniqueIdentifier)
        coder.encode(state.rawValue, forKey: Key.state)
        coder.encode(priority.rawValue, forKey: Key.priority)
        coder.encode(isEssential, forKey: Key.isEssential)
        coder.encode(applicationGroupIdentifier as NSString, forKey: Key.applicationGroupIdentifier)
    }

    /// Decodes a download; nil (and a failed coder) when a property is missing or invalid.
    public required init?(coder: NSCoder) {
        guard let identifier = coder.decodeObject(of: NSString.self, forKey: Key.identifier),
            let uniqueIdentifier = coder.decodeObject(of: NSString.self, forKey: Key.uniqueIdentifier),
            let group = coder.decodeObject(of: NSString.self, forKey: Key.applicationGroupIdentifier),
            let state = State(rawValue: coder.decodeInteger(forKey: Key.state))
        else { return nil }
        self.identifier = String(identifier)
        self.uniqueIdentifier = String(uniqueIdentifier)
        self.state = state
        self.priority = Priority(coder.decodeInteger(forKey: Key.priority))
        self.isEssential = coder.decodeBool(forKey: Key.isEssential)
        self.applicationGroupIdentifier = String(group)
        super.init()
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
