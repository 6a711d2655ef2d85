import Foundation
import NIOCore
import Synchronization

/// A file served from memory (``AssetServer/setFile(_:contents:etag:lastModified:)``).
struct MemoryFile: Sendable {
    var contents: ByteBuffer
    var validators: Validators
}

/// What applies to one request, decided atomically when it arrives.
struct RequestDecision: Sendable {
    /// The behaviour in force for this request (`nil` once a counted `status` is used up).
    var behavior: Behavior?
    /// For `changeETagEachRequest`, `ignoreIfRange` and `switchVersionAfterDrop`: this request's
    /// number among the path's requests under the behaviour (1 for the first).
    var generation: Int
    /// The in-memory file for the path, if any (it wins over `root`).
    var memoryFile: MemoryFile?
}

/// The shared, lock-protected state of one ``AssetServer``: files, behaviours, the request log and the open
/// connections. Every event loop thread and the test's own tasks reach it; each call holds the lock briefly.
final class AssetStore: Sendable {
    /// At most this many requests are kept; past it the oldest half is dropped (a long-running benchmark server
    /// must not grow without bound).
    static let requestLogLimit = 200_000

    /// The directory served after the in-memory files, without a trailing slash; `nil` to serve memory only.
    let rootPath: String?

    private struct BehaviorSlot {
        var behavior: Behavior
        var remaining: Int
        var generation = 0
    }

    private struct State {
        var files: [String: MemoryFile] = [:]
        var behaviors: [String: BehaviorSlot] = [:]
        /// Applies to every path without a behaviour of its own.
        var defaultBehavior: Behavior?
        /// Every this many requests (of any path) is answered 503 (``AssetServer/setFailEvery(_:)``).
        var failEvery: Int?
        var counted = 0
        var requests: [RecordedRequest] = []
        var connections: [ObjectIdentifier: any Channel] = [:]
        var isShutDown = false
    }

    private let state = Mutex(State())

    init(rootPath: String?) {
        var rootPath = rootPath
        while let path = rootPath, path.count > 1, path.hasSuffix("/") { rootPath = String(path.dropLast()) }
        self.rootPath = rootPath
    }

    // MARK: Files

    func setFile(_ path: String, contents: [UInt8], etag: String?, lastModified: Date?) {
        let validators = Validators(
            etag: etag.map(Validators.quoted) ?? Validators.etag(forContents: contents),
            lastModified: lastModified.map(Self.seconds) ?? Self.seconds(Date()))
        let file = MemoryFile(contents: ByteBuffer(bytes: contents), validators: validators)
        state.withLock { $0.files[RequestPath.key(path)] = file }
    }

    func replaceFile(_ path: String, contents: [UInt8]) {
        let etag = Validators.etag(forContents: contents)
        let buffer = ByteBuffer(bytes: contents)
        let now = Self.seconds(Date())
        state.withLock { state in
            // Last-Modified has one-second resolution: move it forward even if the old one is this second.
            let previous = state.files[RequestPath.key(path)]?.validators.lastModified
            let lastModified = previous.map { max(now, $0 + 1) } ?? now
            state.files[RequestPath.key(path)] = MemoryFile(
                contents: buffer, validators: Validators(etag: etag, lastModified: lastModified))
        }
    }

    // MARK: Behaviours

    func setBehavior(_ behavior: Behavior?, for path: String) {
        let slot = behavior.map { behavior -> BehaviorSlot in
            if case .status(_, _, let times) = behavior { return BehaviorSlot(behavior: behavior, remaining: times) }
            return BehaviorSlot(behavior: behavior, remaining: Int.max)
        }
        state.withLock { $0.behaviors[RequestPath.key(path)] = slot }
    }

    func setDefaultBehavior(_ behavior: Behavior?) {
        state.withLock { $0.defaultBehavior = behavior }
    }

    /// Takes the decision for one request of `path`, counting it against a `status` behaviour's `times` and
    /// advancing a `changeETagEachRequest` generation.
    func setFailEvery(_ count: Int?) {
        state.withLock {
            $0.failEvery = count
            $0.counted = 0
        }
    }

    func decide(_ path: String) -> RequestDecision {
        state.withLock { state in
            var decision = RequestDecision(behavior: nil, generation: 0, memoryFile: state.files[path])
            if let every = state.failEvery {
                state.counted += 1
                if state.counted % every == 0 {
                    decision.behavior = .status(503)
                    return decision
                }
            }
            guard var slot = state.behaviors[path] else {
                decision.behavior = state.defaultBehavior
                return decision
            }
            switch slot.behavior {
            case .status:
                guard slot.remaining > 0 else { return decision }
                slot.remaining -= 1
            case .changeETagEachRequest, .ignoreIfRange:
                slot.generation += 1
                decision.generation = slot.generation
            case .switchVersionAfterDrop(_, _, _, let newContents):
                slot.generation += 1
                decision.generation = slot.generation
                if slot.generation > 1, let old = decision.memoryFile {
                    decision.memoryFile = MemoryFile(
                        contents: ByteBuffer(bytes: newContents), validators: old.validators)
                }
            default:
                break
            }
            state.behaviors[path] = slot
            decision.behavior = slot.behavior
            return decision
        }
    }

    // MARK: Request log

    func record(_ request: RecordedRequest) {
        state.withLock { state in
            if state.requests.count >= Self.requestLogLimit {
                state.requests.removeFirst(Self.requestLogLimit / 2)
            }
            state.requests.append(request)
        }
    }

    var requests: [RecordedRequest] { state.withLock { $0.requests } }

    // MARK: Connections

    /// Tracks an accepted connection so that shutdown can close it (a stalled response never ends by itself).
    /// Returns `false` if the server is already shutting down; the caller then closes the channel.
    func register(_ channel: any Channel) -> Bool {
        let id = ObjectIdentifier(channel)
        let accepted = state.withLock { state in
            guard !state.isShutDown else { return false }
            state.connections[id] = channel
            return true
        }
        if accepted {
            channel.closeFuture.whenComplete { [weak self] _ in
                self?.state.withLock { _ = $0.connections.removeValue(forKey: id) }
            }
        }
        return accepted
    }

    /// Marks the store shut down and returns the open connections, or `nil` if it was already shut down.
    func beginShutdown() -> [any Channel]? {
        state.withLock { state in
            guard !state.isShutDown else { return nil }
            state.isShutDown = true
            return Array(state.connections.values)
        }
    }

    private static func seconds(_ date: Date) -> Int64 {
        Int64(date.timeIntervalSince1970.rounded(.down))
    }
}
