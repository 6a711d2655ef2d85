import BACore

/// One file to download.
package struct DownloadRequest: Sendable {
    /// One request header.
    package typealias Header = DownloadDescription.Header

    /// User name and password for HTTP authentication.
    package struct Credential: Sendable, Equatable {
        package var user: String
        package var password: String
        package init(user: String, password: String) {
            self.user = user
            self.password = password
        }
    }

    /// Which servers to trust, and how.
    package struct Trust: Sendable, Equatable {
        /// A PEM file of CA certificates to trust instead of the system's.
        package var caFile: String?
        /// A pinned public key: `sha256//BASE64` (one or more, `;`-separated) or a PEM/DER file.
        package var pinnedPublicKey: String?
        /// A folder of CA certificates (hashed names, as `openssl rehash` makes) to trust instead
        /// of the system's.
        package var caDirectory: String?
        /// The only hosts this machine may reach (basd's `allowedHosts` setting), if set: the URL and
        /// every redirect hop must be in it as well as in ``DownloadRequest/allowList``. Unlike that
        /// list it is never lifted. A refused host is never looked up or connected to.
        package var allowedHosts: HostAllowList?
        package init(
            caFile: String? = nil, pinnedPublicKey: String? = nil, caDirectory: String? = nil,
            allowedHosts: HostAllowList? = nil
        ) {
            self.caFile = caFile
            self.pinnedPublicKey = pinnedPublicKey
            self.caDirectory = caDirectory
            self.allowedHosts = allowedHosts
        }
    }

    /// Unique among the engine's transfers.
    package var id: String
    /// https, or http to a loopback host.
    package var url: String
    package var headers: [Header]
    /// Where the finished file goes (atomically renamed into place when complete and verified).
    package var destination: String
    /// The partial file (default: `.ba-partial/NAME.part` beside the destination); its validator
    /// is kept next to it in `<partial>.validator` so a later process can resume it. Keeping
    /// in-flight files in their own small folder spares the destination folder two of the three
    /// directory operations per file (it sees only the final rename), which matters for folders
    /// of thousands of files.
    package var partialPath: String
    /// The exact size the file must have, if known (essential downloads).
    package var expectedSize: Int64?
    /// The most bytes the file may have (a pre-launch allowance): a response declaring more fails
    /// with ``DownloadError/Code/allowanceDisallowed`` before its body is read, and a body that
    /// grows past it fails with ``DownloadError/Code/allowanceExceeded``.
    package var byteLimit: Int64?
    /// The SHA-256 (hex) the file must have, if known.
    package var sha256: String?
    /// Higher first, among queued background transfers.
    package var priority: Int64
    /// Essential transfers start at once, outside the background bound, like foreground ones; unlike
    /// them they keep the background retry policy (they do not fail fast).
    package var isEssential: Bool
    /// Foreground transfers start at once, outside the background bound, and fail fast.
    package var isForeground: Bool
    /// Hosts the URL and every redirect hop must be in, if set (an app's pre-launch list; see
    /// ``DownloadEngine/liftRestrictions(_:)``). ``Trust/allowedHosts`` applies as well.
    package var allowList: HostAllowList?
    /// Sent when the server asks (401); otherwise the engine asks through an event.
    package var credential: Credential?
    package var trust: Trust
    /// The validator the owner remembers for the partial file's bytes (basd keeps it in its
    /// store), used when the `.validator` sidecar is missing: a disk that filled up may have had
    /// no room for it. Without either, bytes already on disk are not resumed.
    package var validator: String?
    /// Whether the finished file is fsynced before it is renamed into place (with
    /// ``DownloadEngine/Configuration/durable``). A file its owner checks and copies elsewhere at
    /// once (an asset pack's chunk) need not be.
    package var durable = true
    /// False when the transfer must not use a metered network: while the engine holds such
    /// transfers (``DownloadEngine/holdMetered(_:)``) it waits, foreground and essential or not.
    package var allowsMeteredNetwork = true
    /// A content-addressed download: the body goes to this sink, not to a file, and resumes with
    /// `Range` and no validator (see ``DownloadSink``). Needs ``expectedSize``; ``destination``
    /// and ``partialPath`` then only name the transfer (nothing is written there), ``sha256``
    /// and ``validator`` are not used, and `finished`'s `path` is ``destination``.
    package var sink: (any DownloadSink)?

    package init(
        id: String, url: String, destination: String, partialPath: String? = nil, headers: [Header] = [],
        expectedSize: Int64? = nil, byteLimit: Int64? = nil, sha256: String? = nil, priority: Int64 = 50,
        isEssential: Bool = false, isForeground: Bool = false, allowList: HostAllowList? = nil,
        credential: Credential? = nil, trust: Trust = Trust(), validator: String? = nil,
        allowsMeteredNetwork: Bool = true
    ) {
        self.id = id
        self.url = url
        self.headers = headers
        self.destination = destination
        self.partialPath = partialPath ?? Self.defaultPartialPath(for: destination)
        self.expectedSize = expectedSize
        self.byteLimit = byteLimit
        self.sha256 = sha256?.lowercased()
        self.priority = priority
        self.isEssential = isEssential
        self.isForeground = isForeground
        self.allowList = allowList
        self.credential = credential
        self.trust = trust
        self.validator = validator
        self.allowsMeteredNetwork = allowsMeteredNetwork
    }
}

extension DownloadRequest {
    /// `DIR/.ba-partial/NAME.part` for `DIR/NAME`.
    package static func defaultPartialPath(for destination: String) -> String {
        let slash = destination.lastIndex(of: "/")
        let directory = slash.map { String(destination[..<$0]) } ?? "."
        let name = slash.map { String(destination[destination.index(after: $0)...]) } ?? destination
        return (directory.isEmpty ? "" : directory) + "/.ba-partial/" + name + ".part"
    }
}

/// What the engine reports. Events of one transfer arrive in order.
package enum DownloadEvent: Sendable, Equatable {
    /// The transfer the event is about (its request's ``DownloadRequest/id``).
    package var id: String {
        switch self {
        case .began(let id, _, _), .paused(let id, _), .progress(let id, _, _), .validator(let id, _),
            .retrying(let id, _, _, _), .needsCredentials(let id, _), .finished(let id, _, _, _, _),
            .failed(let id, _):
            id
        case .serverWaiting(let server, _, _, _), .serverAnswered(let server, _, _): "server:" + server
        }
    }

    /// A request started; `offset` bytes were already on disk and are kept.
    case began(id: String, offset: Int64, isForeground: Bool)
    /// The transfer stopped with `bytesOnDisk` kept (before a promotion, or paused).
    case paused(id: String, bytesOnDisk: Int64)
    /// Bytes arrived (at most every 100 ms per transfer, and once at the end).
    case progress(id: String, bytesWritten: Int64, totalBytes: Int64?)
    /// The server's validator for the partial file: persist it to resume after a restart.
    case validator(id: String, value: String)
    /// A transient failure; the next attempt starts after `delay`.
    case retrying(id: String, attempt: Int, delay: Duration, reason: String)
    /// The server asked for credentials; answer with ``DownloadEngine/respond(to:with:)``.
    case needsCredentials(id: String, challenge: String)
    /// Done: the file is at `path`, verified. `receivedBytes` counts body bytes received from
    /// the network over all attempts (equal to `size` when nothing was fetched twice).
    case finished(id: String, path: String, size: Int64, sha256: String, receivedBytes: Int64)
    case failed(id: String, error: DownloadError)
    /// Requests to `server` (``ServerGate/key(of:)``) got no answer (`reason`, the last failure):
    /// the transfers that failed wait for it, tried one at a time, the next try in `nextProbeIn`;
    /// `waiting` transfers wait. Sent when the server goes down and after each failed try. Its
    /// ``id`` is `server:` and the server.
    case serverWaiting(server: String, reason: String, nextProbeIn: Duration, waiting: Int)
    /// `server` answered (or the network changed): its `released` waiting transfers start again
    /// now; it was down for `downFor`.
    case serverAnswered(server: String, released: Int, downFor: Duration)
}

/// An answer to ``DownloadEvent/needsCredentials(id:challenge:)``.
package enum ChallengeResponse: Sendable, Equatable {
    case useCredential(DownloadRequest.Credential)
    /// Fail the transfer with an authentication error.
    case cancel
}

/// Monotonic time for backoff and retries, injectable so tests drive time instead of sleeping.
package protocol EngineClock: Sendable {
    /// Time since an arbitrary fixed origin.
    func now() -> Duration
}

/// The system's monotonic clock.
package struct SystemEngineClock: EngineClock {
    private let origin = ContinuousClock.now
    package init() {}
    package func now() -> Duration { ContinuousClock.now - origin }
}

/// A clock that moves only when told to; after ``advance(by:)`` call ``DownloadEngine/wake()``.
package final class ManualEngineClock: EngineClock, @unchecked Sendable {
    private var current: Duration = .zero
    private let lock = NSLockLike()
    package init() {}
    package func now() -> Duration { lock.withLock { current } }
    package func advance(by duration: Duration) { lock.withLock { current += duration } }
}
