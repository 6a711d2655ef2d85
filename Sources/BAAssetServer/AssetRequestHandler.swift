import BAHTTP
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The bytes a response's body comes from.
enum AssetBody {
    case memory(ByteBuffer)
    case file(NIOFileHandle)

    /// The bytes `range` of the body, as a buffer slice (no copy) or a `FileRegion` (sent with `sendfile`).
    func part(_ range: Range<Int>) -> IOData {
        switch self {
        case .memory(let buffer):
            guard let slice = buffer.getSlice(at: buffer.readerIndex + range.lowerBound, length: range.count) else {
                preconditionFailure(
                    "range \(range) outside a \(buffer.readableBytes)-byte body: planned for another size")
            }
            return .byteBuffer(slice)
        case .file(let handle):
            return .fileRegion(
                FileRegion(fileHandle: handle, readerIndex: range.lowerBound, endIndex: range.upperBound))
        }
    }
}

/// Answers the requests of one connection, after NIO's HTTP/1.1 decoder, encoder and pipelining handler (which
/// holds a pipelined request back until the previous response has ended, so there is one response at a time).
///
/// Lives on its channel's event loop; it reaches shared state only through the ``AssetStore``.
final class AssetRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let store: AssetStore
    private let threadPool: NIOThreadPool
    /// The head of the request being received.
    private var request: HTTPRequestHead?
    /// The disk files of responses in flight, each closed when its response's last write completes, the rest when
    /// the connection ends. Usually one, but NIO's pipelining handler hands over the next request as soon as a
    /// response's end is *written*, so a pipelined request's file can be opened while the previous body is still
    /// being sent.
    private var openFiles: [ObjectIdentifier: NIOFileHandle] = [:]
    /// The next chunk of a trickled body.
    private var trickleTask: Scheduled<Void>?
    private var isActive = true

    init(store: AssetStore, threadPool: NIOThreadPool) {
        self.store = store
        self.threadPool = threadPool
    }

    // MARK: Channel events

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
            store.record(RecordedRequest(head))
        case .body:
            break  // GET and HEAD have no body worth reading; anything else is refused at the end.
        case .end:
            guard let head = request else { return }
            request = nil
            respond(to: head, context: context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Decoding errors were answered (400) by NIO's error handler before us; what arrives here is a broken
        // connection. Nothing to tell the peer.
        context.close(promise: nil)
    }

    private func stop() {
        isActive = false
        trickleTask?.cancel()
        trickleTask = nil
        // The channel is closed (its pending writes have failed) or leaving: nothing reads these files any more.
        for file in openFiles.values { try? file.close() }
        openFiles = [:]
    }

    /// Closes the file behind `body` once nothing more will be written from it.
    private func release(_ body: AssetBody) {
        guard case .file(let handle) = body, let file = openFiles.removeValue(forKey: ObjectIdentifier(handle)) else {
            return
        }
        try? file.close()
    }

    // MARK: Answering

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let isHead = head.method == .HEAD
        guard head.method == .GET || isHead else {
            return sendText(
                .methodNotAllowed, "only GET and HEAD", headers: [("Allow", "GET, HEAD")], to: head, context: context)
        }
        guard let path = RequestPath.decode(head.uri) else {
            return sendText(.badRequest, "bad or refused path", to: head, context: context)
        }
        let decision = store.decide(path)

        switch decision.behavior {
        case .status(let code, let retryAfter, _):
            let status = HTTPResponseStatus(statusCode: code)
            return sendText(
                status, "\(code) \(status.reasonPhrase) (AssetServer behavior)",
                headers: retryAfter.map { [("Retry-After", $0)] } ?? [], to: head, context: context)
        case .redirect(let location, let code):
            return sendText(
                HTTPResponseStatus(statusCode: code), "see \(location)", headers: [("Location", location)], to: head,
                context: context)
        case .requireBasicAuth(let user, let password):
            guard Self.isAuthorized(head.headers.first(name: "authorization"), user: user, password: password) else {
                return sendText(
                    .unauthorized, "credentials required",
                    headers: [("WWW-Authenticate", "Basic realm=\"assets\"")], to: head, context: context)
            }
        default:
            break
        }

        if let memory = decision.memoryFile {
            return serve(
                .memory(memory.contents), size: memory.contents.readableBytes, validators: memory.validators,
                decision: decision, path: path, head: head, context: context)
        }
        guard let root = store.rootPath else {
            return sendText(.notFound, "no such asset", to: head, context: context)
        }
        // Opening is blocking file system work: do it on the thread pool, answer back on the event loop.
        threadPool.runIfActive(eventLoop: context.eventLoop) { DiskFile.openForReading(root + path) }
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .success(.opened(let disk)):
                    guard self.isActive else {
                        try? disk.handle.close()
                        return
                    }
                    self.openFiles[ObjectIdentifier(disk.handle)] = disk.handle
                    self.serve(
                        .file(disk.handle), size: disk.size, validators: disk.validators, decision: decision,
                        path: path, head: head, context: context)
                case .success(.notFound):
                    self.sendText(.notFound, "no such asset", to: head, context: context)
                case .success(.forbidden):
                    self.sendText(.forbidden, "not readable", to: head, context: context)
                case .success(.failed(let error)):
                    self.sendText(
                        .internalServerError, "open failed: errno \(error)", to: head, context: context)
                case .failure(let error):
                    self.sendText(.internalServerError, "open failed: \(error)", to: head, context: context)
                }
            }
    }

    private func serve(
        _ body: AssetBody, size: Int, validators: Validators, decision: RequestDecision, path: String,
        head: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        let plan = ResponsePlan.asset(
            isHead: head.method == .HEAD, range: head.headers.first(name: "range"),
            ifRange: head.headers.first(name: "if-range"), size: size,
            validators: validators.changed(generation: decision.generation), behavior: decision.behavior,
            generation: decision.generation, contentType: ContentType.of(path))
        let close = plan.closeAfter || !head.isKeepAlive
        writeHead(plan.status, headers: plan.headers, close: close, for: head, context: context)

        let bytes = plan.body
        switch plan.delivery {
        case .all:
            if !bytes.isEmpty {
                context.write(wrapOutboundOut(.body(body.part(bytes))), promise: nil)
            }
            finish(body, close: close, context: context)
        case .dropAfter(let n):
            // No end of message: the peer sees the connection close n bytes into the body.
            writeThenRelease(body, bytes.prefix(n), context: context) { context.close(promise: nil) }
        case .stall(let n):
            // The response never ends; shutdown or the peer closes the connection.
            writeThenRelease(body, bytes.prefix(n), context: context) {}
        case .trickle(let rate):
            context.flush()
            // At most 100 writes a second; chunk k goes out at start + k × interval, so timer lateness
            // does not accumulate.
            let chunk = max(1, rate / 100)
            let interval = TimeAmount.nanoseconds(Int64(chunk) * 1_000_000_000 / Int64(rate))
            trickle(
                body, bytes, next: bytes.lowerBound, chunk: chunk, start: .now(), interval: interval, step: 0,
                close: close, context: context)
        }
    }

    private func trickle(
        _ body: AssetBody, _ bytes: Range<Int>, next: Int, chunk: Int, start: NIODeadline, interval: TimeAmount,
        step: Int64, close: Bool, context: ChannelHandlerContext
    ) {
        trickleTask = nil
        guard isActive else { return }
        let end = min(next + chunk, bytes.upperBound)
        context.writeAndFlush(wrapOutboundOut(.body(body.part(next..<end))), promise: nil)
        guard end < bytes.upperBound else { return finish(body, close: close, context: context) }
        let deadline = start + TimeAmount.nanoseconds(interval.nanoseconds * (step + 1))
        trickleTask = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.trickle(
                body, bytes, next: end, chunk: chunk, start: start, interval: interval, step: step + 1, close: close,
                context: context)
        }
    }

    /// Writes `bytes` of `body` (possibly none), and once that is on the wire (or failed) releases the file
    /// and runs `then`.
    private func writeThenRelease(
        _ body: AssetBody, _ bytes: Range<Int>, context: ChannelHandlerContext, then: @escaping () -> Void
    ) {
        let written = context.eventLoop.makePromise(of: Void.self)
        if bytes.isEmpty {
            context.flush()
            written.succeed()
        } else {
            context.writeAndFlush(wrapOutboundOut(.body(body.part(bytes))), promise: written)
        }
        written.futureResult.assumeIsolated().whenComplete { _ in
            self.release(body)
            then()
        }
    }

    /// Ends the response; releases its file (if any) when that last write completes and closes the connection if
    /// asked.
    private func finish(_ body: AssetBody? = nil, close: Bool, context: ChannelHandlerContext) {
        let ended = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: ended)
        ended.futureResult.assumeIsolated().whenComplete { _ in
            if let body { self.release(body) }
            if close { context.close(promise: nil) }
        }
    }

    private func writeHead(
        _ status: HTTPResponseStatus, headers: HTTPHeaders, close: Bool, for request: HTTPRequestHead,
        context: ChannelHandlerContext
    ) {
        var headers = headers
        headers.add(name: "Date", value: HTTPDate.format(Int64(Date().timeIntervalSince1970)))
        if close {
            headers.add(name: "Connection", value: "close")
        } else if request.version.major == 1 && request.version.minor == 0 {
            headers.add(name: "Connection", value: "keep-alive")
        }
        let version = request.version.major == 1 && request.version.minor == 0 ? HTTPVersion.http1_0 : .http1_1
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: version, status: status, headers: headers))), promise: nil)
    }

    /// A short text answer (errors, behaviours). HEAD gets the same headers without the body.
    private func sendText(
        _ status: HTTPResponseStatus, _ text: String, headers extra: [(String, String)] = [],
        to request: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        var headers = HTTPHeaders(extra)
        let body = ByteBuffer(string: text + "\n")
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        let close = !request.isKeepAlive
        writeHead(status, headers: headers, close: close, for: request, context: context)
        if request.method != .HEAD && status.mayHaveResponseBody {
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        finish(close: close, context: context)
    }

    /// Whether an `Authorization` value carries Basic credentials equal to `user:password`.
    static func isAuthorized(_ header: String?, user: String, password: String) -> Bool {
        guard let header else { return false }
        let parts = header.trimmingSpaces().split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
            let data = Data(base64Encoded: parts[1].trimmingSpaces()),
            let credentials = String(bytes: data, encoding: .utf8)
        else { return false }
        return credentials == "\(user):\(password)"
    }
}

extension RecordedRequest {
    init(_ head: HTTPRequestHead) {
        self.init(
            method: head.method.rawValue, target: head.uri, path: RequestPath.decode(head.uri) ?? head.uri,
            headers: head.headers.map { Header(name: $0.name, value: $0.value) })
    }
}

extension Range<Int> {
    /// The first `n` elements (all of them if there are fewer).
    func prefix(_ n: Int) -> Range<Int> {
        lowerBound..<(lowerBound + Swift.min(Swift.max(0, n), count))
    }
}
