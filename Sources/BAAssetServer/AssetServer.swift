import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A loopback HTTP/1.1 server of test assets that can misbehave on purpose: the peer the download engine is
/// tested and benchmarked against.
///
/// It serves GET and HEAD with `Content-Length`, a strong `ETag`, `Last-Modified` and `Accept-Ranges: bytes`;
/// single byte ranges (`bytes=a-b`, `bytes=a-`, `bytes=-n`) with 206 and `Content-Range`, 416 when none of the
/// bytes exist, and `If-Range` with an entity tag or an HTTP date. Connections are kept alive and pipelined
/// requests answered in order. Files come from memory (``setFile(_:contents:etag:lastModified:)``) or, after
/// that, from the `root` directory, sent with `sendfile` so a gigabyte costs no memory; a disk file's `ETag`
/// is made of its inode, size and modification time. Paths with a `..` segment are refused (400).
///
/// Each path can be given one ``Behavior`` (drop the connection, stall, trickle, lie about the length, ignore
/// ranges, change the ETag, answer an error status, ask for credentials, redirect), and every request is
/// recorded for assertions. The server runs on NIO's shared event loops until ``shutdown()``, which closes
/// every connection (stalled ones included) and frees the port.
///
/// ```swift
/// let server = try await AssetServer.start()
/// server.setFile("/a.bin", contents: Array(repeating: 7, count: 1000))
/// server.setBehavior(.dropAfter(bytes: 100), for: "/a.bin")
/// // … download server.url("/a.bin") and watch it fail 100 bytes in …
/// #expect(server.requests(for: "/a.bin").count == 1)
/// try await server.shutdown()
/// ```
package final class AssetServer: Sendable {
    /// The port the server listens on (the one chosen by the system when started with port 0).
    package let port: Int
    /// The host the server listens on, as given to ``start(root:host:port:)``.
    package let host: String

    private let store: AssetStore
    private let channel: any Channel

    private init(store: AssetStore, channel: any Channel, host: String, port: Int) {
        self.store = store
        self.channel = channel
        self.host = host
        self.port = port
    }

    /// Starts listening on `host`:`port` and returns once the socket is bound.
    ///
    /// - Parameters:
    ///   - root: A directory whose regular files are served (a request for `/a/b.bin` reads `root/a/b.bin`)
    ///     when no in-memory file has the path; `nil` to serve only in-memory files. Symbolic links inside it
    ///     are followed: put only what may be served there.
    ///   - host: The address to bind; keep the default loopback address for tests.
    ///   - port: The port; 0 lets the system choose a free one (read it from ``port``).
    /// - Throws: The bind error, for example when the port is taken.
    package static func start(root: URL? = nil, host: String = "127.0.0.1", port: Int = 0) async throws -> AssetServer {
        let store = AssetStore(rootPath: root?.standardizedFileURL.path)
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard store.register(channel) else {
                        channel.close(promise: nil)  // accepted while shutting down
                        return
                    }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        AssetRequestHandler(store: store, threadPool: NIOThreadPool.singleton))
                }
            }
        let channel = try await bootstrap.bind(host: host, port: port).get()
        guard let boundPort = channel.localAddress?.port else {
            try? await channel.close()
            throw AssetServerError(message: "the listening socket on \(host):\(port) has no port")
        }
        return AssetServer(store: store, channel: channel, host: host, port: boundPort)
    }

    /// `http://HOST:PORT`, without a trailing slash (an IPv6 host in brackets).
    package var baseURL: String {
        host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)"
    }

    /// ``baseURL`` followed by `path` (a leading slash is added if missing): `server.url("/a.bin")`.
    package func url(_ path: String) -> String {
        baseURL + RequestPath.key(path)
    }

    /// Stops listening and closes every connection, including stalled and trickling ones; returns once the
    /// port is free. Calling it again does nothing.
    package func shutdown() async throws {
        guard let connections = store.beginShutdown() else { return }
        try? await channel.close()
        for connection in connections {
            try? await connection.close()
        }
    }

    /// Serves `contents` at `path` from memory, in preference to a file of that path under `root`; replaces any
    /// file already there.
    ///
    /// - Parameters:
    ///   - path: The request path, for example `/a.bin` (a leading slash is added if missing).
    ///   - contents: The bytes.
    ///   - etag: The entity tag to send, quoted or not (`abc` is sent as `"abc"`); `nil` derives it from the
    ///     contents, so equal contents have equal tags.
    ///   - lastModified: The `Last-Modified` time (whole seconds are kept); `nil` for now.
    package func setFile(_ path: String, contents: [UInt8], etag: String? = nil, lastModified: Date? = nil) {
        store.setFile(path, contents: contents, etag: etag, lastModified: lastModified)
    }

    /// Replaces the contents at `path` as a new version of the file: the `ETag` is derived from the new contents
    /// and `Last-Modified` moves forward (by at least one second), so an `If-Range` for the old version no
    /// longer matches.
    package func replaceFile(_ path: String, contents: [UInt8]) {
        store.replaceFile(path, contents: contents)
    }

    /// Makes the server misbehave for `path` from the next request on, replacing any previous behaviour of that
    /// path; `nil` restores normal service. The path is matched exactly against the decoded request path
    /// without query (`/a.bin`); a behaviour applies even when no file has the path (`status`, `redirect`).
    package func setBehavior(_ behavior: Behavior?, for path: String) {
        store.setBehavior(behavior, for: path)
    }

    /// Makes every path without a behaviour of its own behave this way (a `trickle` for the whole
    /// server, say); `nil` restores normal service.
    package func setDefaultBehavior(_ behavior: Behavior?) {
        store.setDefaultBehavior(behavior)
    }

    /// Answers every `count`th request (of any path, counted from now; HEAD too) with 503, as a
    /// CDN that fails now and then does, before any behaviour; `nil` stops it.
    package func setFailEvery(_ count: Int?) {
        precondition(count.map { $0 >= 1 } ?? true, "setFailEvery needs a count of 1 or more")
        store.setFailEvery(count)
    }

    /// Every request received so far, in order of arrival (the most recent 200,000 at most).
    package var requests: [RecordedRequest] {
        store.requests
    }

    /// The recorded requests whose decoded path (without query) is `path`.
    package func requests(for path: String) -> [RecordedRequest] {
        let key = RequestPath.key(path)
        return store.requests.filter { $0.path == key }
    }
}

/// A failure of ``AssetServer`` itself (not of a request).
package struct AssetServerError: Error, CustomStringConvertible {
    /// What went wrong.
    package var message: String
    package var description: String { message }
}
