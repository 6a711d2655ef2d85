import BATestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One line of a loopback server's access log: the body bytes it sent, its status, the request's
/// `Range` (empty for none) and path.
struct ServedRequest: Sendable {
    var bytes: Int
    var status: Int
    var range: String
    var path: String

    /// A pack's unit: a bundle or a chunk file (by a mirror's path too).
    var isUnit: Bool { path.hasSuffix(".bundle") || path.contains("/chunks/") }

    /// Parses `BYTES STATUS "RANGE" PATH` lines.
    static func parse(_ text: String) -> [ServedRequest] {
        text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: "\"", omittingEmptySubsequences: false)
            guard parts.count >= 3 else { return nil }
            let head = parts[0].split(separator: " ")
            guard head.count == 2, let bytes = Int(head[0]), let status = Int(head[1]) else { return nil }
            // nginx logs `"GET /path HTTP/1.1"` (and `-` for no Range); the test's own server the path alone.
            let target = parts[2...].joined().trimmingCharacters(in: .whitespaces).split(separator: " ")
            let path = String(target.count == 3 ? target[1] : target.first ?? "")
            let range = parts[1] == "-" ? "" : String(parts[1])
            return ServedRequest(bytes: bytes, status: status, range: range, path: path)
        }
    }
}

/// A loopback HTTP/1.1 server of the test's own (python3) that serves `root` as a lying CDN does
/// (no validators either), and stops itself after ten minutes:
/// - `ignore-range`: a 200 with the whole file for every request, ranged or not;
/// - `wrong-range`: a ranged request gets a 206 from `shift` bytes off the asked start (an honest
///   `Content-Range` for the wrong range);
/// - `truncate`: every response of a unit ends after `cut` body bytes (the connection closes);
/// - `redirect`: every object answers 302 to its copy under `/m/`.
/// In every mode the first response of each unit (bundle or chunk file) is cut after `cut` body
/// bytes, so that what follows is a resume. Its log: `BYTES STATUS "RANGE" PATH`.
final class MisbehavingServer {
    let child: ChildProcess
    let port: Int
    let log: String

    var baseURL: String { "http://127.0.0.1:\(port)" }

    init(root: String, mode: String, shift: Int = 0, cut: Int, directory: String) throws {
        let script = directory + "/server.py"
        log = directory + "/server.log"
        try Data(Self.script.utf8).write(to: URL(fileURLWithPath: script))
        child = try ChildProcess(
            "/usr/bin/python3", [script, root, mode, String(shift), String(cut), log, "600"])
        let output = try child.waitForOutput(containing: "\n", timeout: 20)
        guard let port = Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw HarnessError("the test server said \(output)")
        }
        self.port = port
    }

    var requests: [ServedRequest] {
        ServedRequest.parse((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }

    func stop() { child.kill() }

    static let script = #"""
        import http.server, os, socketserver, sys, threading, urllib.parse
        root = os.path.realpath(sys.argv[1])
        mode, shift, cut, log, lifetime = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], float(sys.argv[6])
        lock = threading.Lock()
        seen = set()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def record(self, status, sent):
                with lock, open(log, "a") as f:
                    f.write('%d %d "%s" %s\n' % (sent, status, self.headers.get("Range", ""), self.path))

            def answer(self, status, headers, body=b""):
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.record(status, len(body))

            def do_GET(self):
                path = urllib.parse.urlparse(self.path).path
                if mode == "redirect" and not path.startswith("/m/"):
                    return self.answer(302, [("Location", "/m" + path)])
                local = path[2:] if path.startswith("/m/") else path
                file = os.path.realpath(os.path.join(root, local.lstrip("/")))
                if not file.startswith(root + "/") or not os.path.isfile(file):
                    return self.answer(404, [])
                with open(file, "rb") as f:
                    data = f.read()
                size, start, status, headers = len(data), 0, 200, [("Accept-Ranges", "bytes")]
                asked = self.headers.get("Range", "")
                if asked.startswith("bytes=") and asked.endswith("-") and mode != "ignore-range":
                    first = int(asked[6:-1])
                    if first >= size:
                        return self.answer(416, [("Content-Range", "bytes */%d" % size)])
                    start = min(max(0, first + shift), size - 1) if mode == "wrong-range" else first
                    status = 206
                    headers.append(("Content-Range", "bytes %d-%d/%d" % (start, size - 1, size)))
                body = data[start:]
                unit = path.endswith(".bundle") or "/chunks/" in path
                with lock:
                    first_time = unit and path not in seen
                    seen.add(path)
                sent = min(len(body), cut) if unit and (mode == "truncate" or first_time) else len(body)
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[:sent])
                self.wfile.flush()
                self.record(status, sent)
                if sent < len(body):
                    self.close_connection = True

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        server = Server(("127.0.0.1", 0), Handler)
        print(server.server_address[1], flush=True)
        threading.Timer(lifetime, server.shutdown).start()
        server.serve_forever()
        """#
}
