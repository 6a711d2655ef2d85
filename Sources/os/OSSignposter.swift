/// Apple's signposts (`OSSignposter`), so that code that marks intervals for Instruments compiles.
///
/// On Linux they are no-ops: nothing is recorded (there is no Instruments to read them), an
/// interval's work still runs, and ``isEnabled`` is false.
public struct OSSignposter: Sendable {
    /// A signposter for `subsystem` and `category`.
    public init(subsystem: String, category: String) {}
    /// A signposter for `category`, one of Apple's special categories.
    public init(subsystem: String, category: OSLog.Category) {}
    /// A signposter for the subsystem and category of `logger`.
    public init(logger: Logger) {}
    /// A signposter for the subsystem and category of `logHandle`.
    public init(logHandle: OSLog) {}
    /// A signposter that records nothing.
    public static let disabled = OSSignposter(subsystem: "", category: "")

    /// Whether signposts are recorded: never on Linux.
    public var isEnabled: Bool { false }

    /// A new signpost identifier.
    public func makeSignpostID() -> OSSignpostID { OSSignpostID(UInt64.random(in: 1..<UInt64.max)) }

    /// The signpost identifier of `object`.
    public func makeSignpostID(from object: AnyObject) -> OSSignpostID {
        OSSignpostID(UInt64(UInt(bitPattern: ObjectIdentifier(object).hashValue)))
    }

    /// Marks a point in time (no-op).
    public func emitEvent(_ name: StaticString, id: OSSignpostID = .exclusive) {}
    /// Marks a point in time, with a message (no-op).
    public func emitEvent(_ name: StaticString, id: OSSignpostID = .exclusive, _ message: OSLogMessage) {}

    /// Begins an interval (no-op): the state to end it with.
    public func beginInterval(_ name: StaticString, id: OSSignpostID = .exclusive) -> OSSignpostIntervalState {
        OSSignpostIntervalState(id: id)
    }

    /// Begins an interval with a message (no-op): the state to end it with.
    public func beginInterval(
        _ name: StaticString, id: OSSignpostID = .exclusive, _ message: OSLogMessage
    ) -> OSSignpostIntervalState {
        OSSignpostIntervalState(id: id)
    }

    /// Begins an animation interval (no-op): the state to end it with.
    public func beginAnimationInterval(
        _ name: StaticString, id: OSSignpostID = .exclusive, _ message: OSLogMessage
    ) -> OSSignpostIntervalState {
        OSSignpostIntervalState(id: id)
    }

    /// Ends an interval (no-op).
    public func endInterval(_ name: StaticString, _ state: OSSignpostIntervalState) {}
    /// Ends an interval, with a message (no-op).
    public func endInterval(_ name: StaticString, _ state: OSSignpostIntervalState, _ message: OSLogMessage) {}

    /// Runs `task` as an interval: its result, or what it throws.
    public func withIntervalSignpost<T>(
        _ name: StaticString, id: OSSignpostID = .exclusive, around task: () throws -> T
    ) rethrows -> T {
        try task()
    }

    /// Runs `task` as an interval with a message: its result, or what it throws.
    public func withIntervalSignpost<T>(
        _ name: StaticString, id: OSSignpostID = .exclusive, _ message: OSLogMessage, around task: () throws -> T
    ) rethrows -> T {
        try task()
    }
}

/// A signpost identifier, as Apple's `OSSignpostID`.
public struct OSSignpostID: Comparable, Hashable, Sendable {
    /// The identifier.
    public let rawValue: UInt64
    /// An identifier with this value.
    public init(_ value: UInt64) { rawValue = value }
    /// A new identifier for `log`.
    public init(log: OSLog) { rawValue = UInt64.random(in: 1..<UInt64.max) }
    /// A new identifier for `log`, from `object`.
    public init(log: OSLog, object: AnyObject) {
        rawValue = UInt64(UInt(bitPattern: ObjectIdentifier(object).hashValue))
    }
    /// The identifier of intervals that never overlap.
    public static let exclusive = OSSignpostID(0xEEEE_B0B5_B2B2_EEEE)
    /// No identifier.
    public static let invalid = OSSignpostID(~0)
    /// The null identifier.
    public static let null = OSSignpostID(0)

    /// Ordered by ``rawValue``.
    public static func < (lhs: OSSignpostID, rhs: OSSignpostID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// An interval begun by ``OSSignposter/beginInterval(_:id:)``, as Apple's `OSSignpostIntervalState`.
public final class OSSignpostIntervalState: Sendable {
    /// The interval's identifier.
    public let signpostID: OSSignpostID
    init(id: OSSignpostID) { signpostID = id }
}
