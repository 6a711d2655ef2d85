import BACore

/// One call into an extension (or several, one after another in the same runner): which library,
/// which entry points, and their budget.
public struct BAExtensionInvocation: Sendable {
    /// The extension's shared library.
    public var libraryPath: String
    /// The entry point and its arguments.
    public var event: RunnerEvent
    /// Events to call after `event`, in order, in the same runner process (the extension stays
    /// loaded between them); each call has its own `timeout`, and the first call that does not
    /// end `ok` ends the runner, leaving the rest uncalled. At most
    /// ``RunRequest/maximumMoreEvents``.
    public var moreEvents: [RunnerEvent] = []
    /// Wall-clock deadline of each call: for the first, from spawn to its return; for each next,
    /// from the previous call's return to its own. Past it the process group is killed.
    public var timeout: Duration
    /// Deadline of all the calls together, from spawn (e.g. what is left of a daily allowance);
    /// nil for none beyond each call's `timeout`.
    public var totalTimeout: Duration?
    /// Memory cap (RLIMIT_DATA) set before the library is loaded; 0 for none.
    public var memoryLimitBytes: UInt64
    /// Most downloads one call may return; past it the whole set is rejected.
    public var maximumDownloads: Int
    /// The app group container (holds the exclusive-control lock), or nil for none.
    public var appGroupContainerPath: String?
    /// What the extension sees as the app's current downloads.
    public var currentDownloads: [DownloadDescription]
    /// Extra environment for the runner process (added to the host's own).
    public var environment: [String: String]

    /// Default deadline per call: 30 seconds.
    public static let defaultTimeout = Duration.seconds(30)
    /// Default memory cap: 512 MiB (a Swift extension with Foundation needs ~40 MiB).
    public static let defaultMemoryLimitBytes: UInt64 = 512 << 20
    /// Default bound on returned downloads: 10,000.
    public static let defaultMaximumDownloads = 10_000

    public init(
        libraryPath: String, event: RunnerEvent, timeout: Duration = defaultTimeout,
        memoryLimitBytes: UInt64 = defaultMemoryLimitBytes, maximumDownloads: Int = defaultMaximumDownloads,
        appGroupContainerPath: String? = nil, currentDownloads: [DownloadDescription] = [],
        environment: [String: String] = [:], moreEvents: [RunnerEvent] = [], totalTimeout: Duration? = nil
    ) {
        self.libraryPath = libraryPath
        self.event = event
        self.moreEvents = moreEvents
        self.totalTimeout = totalTimeout
        self.timeout = timeout
        self.memoryLimitBytes = memoryLimitBytes
        self.maximumDownloads = maximumDownloads
        self.appGroupContainerPath = appGroupContainerPath
        self.currentDownloads = currentDownloads
        self.environment = environment
    }

    /// Every event, in call order.
    public var events: [RunnerEvent] { [event] + moreEvents }

    /// The longest the runner may live: `totalTimeout`, or else `timeout` for each call.
    public var lifetime: Duration {
        totalTimeout ?? timeout * (1 + moreEvents.count)
    }
}

/// A download the host refused, and why.
public struct BARejectedDownload: Sendable, Equatable {
    public var download: DownloadDescription
    /// `BAErrorCode` raw value.
    public var code: Int
    public var reason: String
}

/// A line the extension logged through the host API.
public struct BAExtensionLogLine: Sendable, Equatable {
    /// 0 debug, 1 info, 2 notice, 3 error.
    public var level: Int32
    public var message: String
}

/// Everything one call produced (for a runner of several calls: one of them).
public struct BAExtensionRunResult: Sendable {
    /// Which call of the invocation this is: 0 for `event`, then 1… for `moreEvents`.
    public var callIndex = 0
    /// How the call ended.
    public var verdict: BAExtensionVerdict
    /// Name, version and ABI the library declared (nil if it never got that far).
    public var identity: ExtensionIdentity?
    /// Returned downloads that passed validation, in the order the extension returned them.
    public var downloads: [DownloadDescription] = []
    /// Returned (or scheduled) downloads that did not, with the reason.
    public var rejected: [BARejectedDownload] = []
    /// How many downloads the extension tried to return.
    public var returnedCount: Int = 0
    /// Downloads scheduled through the manager (outside `downloads(for:…)`).
    public var scheduled: [DownloadDescription] = []
    /// Identifiers cancelled through the manager.
    public var cancelled: [String] = []
    /// Lines logged through the host API (at most 1,000 kept).
    public var logs: [BAExtensionLogLine] = []
    /// For a challenge call: the disposition and credential the extension answered with.
    public var challengeDisposition: Int32?
    /// For a `shouldDownload` call that ended `ok`: one answer per pack, in the order asked
    /// (true: download it). All true when the extension has no `should_download` entry point.
    public var shouldDownload: [Bool]?
    public var credential: (user: String, password: String)?
    /// Wall-clock time of the call: from spawn (the first call) or the previous call's return,
    /// to its return (or, for the call that ended the runner, its reap).
    public var duration: Duration = .zero
    /// Peak resident memory of the runner process, if it finished.
    public var peakMemoryBytes: Int64?
    /// The tail (at most 64 KiB) of what the extension wrote to stdout and stderr (in the
    /// result of the call that ended the runner; empty in the others).
    public var output: String = ""
    /// The runner's process id, which was also its process group id (the group is killed when
    /// the call ends).
    public var processID: Int32 = 0
    /// Whether the runner was forked from the warm runner (else it was spawned).
    public var wasForked = false
}

/// A failure of the host itself (not of the extension): no verdict could be produced.
public struct BAExtensionHostError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
