internal import BACore
internal import BADaemonProtocol
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Calls the app's ``BADownloadManagerDelegate`` for the events basd pushes, on one dedicated
/// thread (`ba-delegate-delivery`), one callback at a time, in the order basd sent them.
///
/// The connection's reader thread only queues events (``enqueue(_:)``), so a slow delegate never
/// stalls replies to calls. Each durable event is acknowledged after its callback returns (a
/// batch of queued events with one acknowledgement). While no delegate is set, durable events
/// wait here (not acknowledged) until one is, and transient progress is dropped.
final class AppEventDelivery: @unchecked Sendable {
    /// Acknowledges and answers challenges; set once, before any event arrives.
    weak var connection: AppDaemonConnection?

    private let delegateProvider: @Sendable () -> (any BADownloadManagerDelegate)?
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var queue: [DownloadEvent] = []
    private var parked: [DownloadEvent] = []
    private var thread: Thread?
    /// Touched only on the delivery thread.
    private var filter = AppEventFilter()

    init(delegate: @escaping @Sendable () -> (any BADownloadManagerDelegate)?) {
        delegateProvider = delegate
    }

    /// Queues an event (from the reader thread); never blocks on the delegate.
    func enqueue(_ event: DownloadEvent) {
        condition.lock()
        queue.append(event)
        if thread == nil {
            let thread = Thread { [self] in run() }
            thread.name = "ba-delegate-delivery"
            self.thread = thread
            thread.start()
        }
        condition.signal()
        condition.unlock()
    }

    /// A delegate was set: the events that waited for one go first.
    func resume() {
        condition.lock()
        queue.insert(contentsOf: parked, at: 0)
        parked.removeAll()
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty { condition.wait() }
            let batch = queue
            queue.removeAll()
            condition.unlock()

            var acknowledgeThrough: Int64 = 0
            for (index, event) in batch.enumerated() {
                guard let delegate = delegateProvider() else {
                    park(batch[index...])
                    break
                }
                deliver(event, to: delegate)
                acknowledgeThrough = max(acknowledgeThrough, event.sequence)
            }
            if acknowledgeThrough > 0 { connection?.acknowledge(throughSequence: acknowledgeThrough) }
        }
    }

    /// Keeps the durable events of `events` for the next delegate.
    private func park(_ events: ArraySlice<DownloadEvent>) {
        condition.lock()
        parked.append(contentsOf: events.filter { $0.sequence > 0 })
        // A delegate set while we looked has already called resume(): take them back now.
        if delegateProvider() != nil {
            queue.insert(contentsOf: parked, at: 0)
            parked.removeAll()
        }
        condition.unlock()
    }

    private func deliver(_ event: DownloadEvent, to delegate: any BADownloadManagerDelegate) {
        let decision = filter.decide(event)
        if decision == .duplicate || decision == .skip { return }
        guard let download = Self.download(for: event) else {
            AppDaemonConnection.log(
                "event \(event.sequence) (\(event.kind.rawValue)) of \(event.identifier) has no usable download; not delivered"
            )
            return
        }
        switch decision {
        case .duplicate, .skip:
            return
        case .began:
            delegate.downloadDidBegin(download)
        case .paused:
            delegate.downloadDidPause(download)
        case .progress(let bytesWritten, let total, let expected):
            delegate.download(
                download, didWriteBytes: bytesWritten, totalBytesWritten: total, totalBytesExpectedToWrite: expected)
        case .failed(let domain, let code, let message):
            delegate.download(download, failedWithError: Self.error(domain: domain, code: code, message: message))
        case .finished(let path):
            guard !path.isEmpty else {
                AppDaemonConnection.log("finished event \(event.sequence) of \(event.identifier) has no file")
                return
            }
            // Handlers the callback started (e.g. a move under withExclusiveControl) run first.
            CompletionHandlers.scoped { delegate.download(download, finishedWithFileURL: URL(fileURLWithPath: path)) }
            // The file is the app's only during the callback: remove it unless the app moved it.
            // A regular file only: a self-hosted asset pack's `finished` names the pack's link in
            // the app group, which stays (`AssetPack.download(for:)`).
            if (try? FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType) == .typeRegular {
                do {
                    try FileManager.default.removeItem(atPath: path)
                } catch {
                    AppDaemonConnection.log("cannot remove the delivered file \(path): \(error.localizedDescription)")
                }
            }
        case .needsCredentials(let challenge):
            let (disposition, credential) = Self.askForCredentials(delegate, download, challenge)
            let use = disposition == .useCredential
            connection?.respondToChallenge(
                event.downloadUniqueIdentifier, disposition.rawValue, use ? credential?.user : nil,
                use ? credential?.password : nil)
        }
    }

    /// Runs the delegate's async challenge method and waits for it here, on the delivery thread
    /// (never on a thread of the concurrency pool).
    private static func askForCredentials(
        _ delegate: any BADownloadManagerDelegate, _ download: BADownload, _ challenge: String
    ) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        let urlChallenge = authenticationChallenge(challenge, url: (download as? BAURLDownload)?.request.url)
        let result = ChallengeResult()
        let done = DispatchSemaphore(value: 0)
        let box = UncheckedBox((delegate, download, urlChallenge))
        Task.detached {
            let (delegate, download, urlChallenge) = box.value
            (result.disposition, result.credential) = await delegate.download(download, didReceive: urlChallenge)
            done.signal()
        }
        done.wait()
        return (result.disposition, result.credential)
    }

    /// A challenge built from the server's `WWW-Authenticate` value and the download's URL.
    static func authenticationChallenge(_ header: String, url: URL?) -> URLAuthenticationChallenge {
        let scheme = header.prefix { !$0.isWhitespace }.lowercased()
        let method =
            switch scheme {
            case "basic": NSURLAuthenticationMethodHTTPBasic
            case "digest": NSURLAuthenticationMethodHTTPDigest
            default: NSURLAuthenticationMethodDefault
            }
        let urlScheme = url?.scheme?.lowercased() ?? "https"
        let space = URLProtectionSpace(
            host: url?.host ?? "", port: url?.port ?? (urlScheme == "http" ? 80 : 443), protocol: urlScheme,
            realm: realm(in: header), authenticationMethod: method)
        return URLAuthenticationChallenge(
            protectionSpace: space, proposedCredential: nil, previousFailureCount: 0, failureResponse: nil,
            error: nil, sender: IgnoringChallengeSender())
    }

    /// The `realm="…"` parameter of a `WWW-Authenticate` value.
    static func realm(in header: String) -> String? {
        guard let start = header.range(of: "realm=\"", options: .caseInsensitive) else { return nil }
        let rest = header[start.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }

    /// The error a `failed` event carries: a ``BAError`` in Background Assets' domain, else an `NSError`.
    static func error(domain: String, code: Int, message: String) -> any Error {
        if domain == BAErrorDomain, let code = BAError.Code(rawValue: code) { return BAError(code, reason: message) }
        return NSError(domain: domain, code: code, userInfo: [NSLocalizedDescriptionKey: message])
    }

    /// The download an event is about, from the payload basd attaches (nil if it has none).
    static func download(for event: DownloadEvent) -> BAURLDownload? {
        guard var download = event.download else { return nil }
        download.uniqueIdentifier = event.downloadUniqueIdentifier
        download.state =
            switch event.kind {
            case .began, .progress, .needsCredentials, .waiting: .downloading
            case .paused: .waiting
            case .finished: .finished
            case .failed: .failed
            }
        return BAURLDownload(record: download)
    }
}
