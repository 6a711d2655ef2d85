import BATestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// nginx as the tests' CDN: one process in the foreground (`master_process off`: stopped by its
/// pid, nothing left behind), on a loopback port below the ephemeral range, serving `root` as
/// plain files. Its access log is `BYTES STATUS "RANGE" "REQUEST"` (``ServedRequest``).
///
/// - `limitRate`: nginx's `limit_rate` for each response (`"2m"`, `"262144"`; nil: none).
/// - `validators`: false takes ETag and Last-Modified away (`etag off`, and `add_header
///   Last-Modified ""` empties the header), as a CDN that sends none.
/// - `port`: a port to listen on (a server that comes back where it was); else one is chosen,
///   another if it is taken.
/// - `sendBuffer`: the listening socket's `sndbuf` (`"32k"`): what nginx counts as sent before a
///   client reads it stays that small.
final class Nginx: @unchecked Sendable {
    static let path = ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
    let child: ChildProcess
    let port: Int
    /// Its configuration, logs and temporary folders.
    let folder: String

    var baseURL: String { "http://127.0.0.1:\(port)" }
    var accessLog: String { folder + "/access.log" }

    private init(child: ChildProcess, port: Int, folder: String) {
        self.child = child
        self.port = port
        self.folder = folder
    }

    static func start(
        root: String, directory: String, limitRate: String? = nil, validators: Bool = true, port: Int? = nil,
        sendBuffer: String? = nil
    ) async throws -> Nginx {
        guard let nginx = path else { throw HarnessError("no nginx: apt-get install nginx-light") }
        for attempt in 0..<20 {
            let chosen = port ?? TestPorts.belowEphemeralRange()
            let folder = directory + "/nginx-\(chosen)-\(attempt)-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let conf = """
                daemon off;
                master_process off;
                pid \(folder)/nginx.pid;
                error_log \(folder)/error.log;
                events { worker_connections 256; }
                http {
                    log_format served '$body_bytes_sent $status "$http_range" "$request"';
                    access_log \(folder)/access.log served;
                    default_type application/octet-stream;
                    client_body_temp_path \(folder)/body;
                    proxy_temp_path \(folder)/proxy;
                    fastcgi_temp_path \(folder)/fastcgi;
                    uwsgi_temp_path \(folder)/uwsgi;
                    scgi_temp_path \(folder)/scgi;
                    server {
                        listen 127.0.0.1:\(chosen)\(sendBuffer.map { " sndbuf=\($0)" } ?? "");
                        root \(root);
                        \(limitRate.map { "limit_rate \($0);" } ?? "")
                        \(validators ? "" : #"etag off; add_header Last-Modified "";"#)
                    }
                }
                """
            try Data(conf.utf8).write(to: URL(fileURLWithPath: folder + "/nginx.conf"))
            let child = try ChildProcess(
                nginx, ["-e", folder + "/error.log", "-p", folder + "/", "-c", folder + "/nginx.conf"])
            let deadline = Date(timeIntervalSinceNow: 20)
            while child.isRunning && !Self.accepts(chosen) && Date() < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            if child.isRunning && Self.accepts(chosen) { return Nginx(child: child, port: chosen, folder: folder) }
            child.kill()
            // A given port must be free soon (the server before it just stopped); another is
            // tried only when none was given.
            if port == nil { continue }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw HarnessError("nginx did not start")
    }

    /// SIGKILL: its connections end at once, as a server that goes away (one process: no worker
    /// is left behind).
    func stop() { child.kill() }

    /// Every request logged so far.
    var requests: [ServedRequest] {
        ServedRequest.parse((try? String(contentsOfFile: accessLog, encoding: .utf8)) ?? "")
    }

    /// How many requests are logged now.
    func mark() -> Int { requests.count }

    /// (path, bytes sent) of each request logged after `mark`.
    func requests(since mark: Int) -> [(path: String, bytes: Int)] {
        requests.dropFirst(mark).map { ($0.path, $0.bytes) }
    }

    /// The TCP connections established to 127.0.0.1:`port` (the server's side, from /proc/net/tcp).
    static func establishedConnections(to port: Int) -> Int {
        let data = FileHandle(forReadingAtPath: "/proc/net/tcp")?.readDataToEndOfFile() ?? Data()
        let local = String(format: "0100007F:%04X", port)
        return String(decoding: data, as: UTF8.self).split(separator: "\n").filter { line in
            let fields = line.split(separator: " ")
            // sl, local_address, rem_address, st (01: ESTABLISHED)
            return fields.count > 3 && fields[1] == local && fields[3] == "01"
        }.count
    }

    /// Whether something accepts a TCP connection on 127.0.0.1:`port`.
    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
