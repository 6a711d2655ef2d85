import BAAssetServer
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `ba fetch` says who failed and how: a proxy that is down or wants credentials is named as the
/// proxy (not blamed on the origin), a server that encodes the file anyway is named with its
/// encoding, and requests say who sent them (`User-Agent`).
@Suite(.timeLimit(.minutes(1))) struct FetchDiagnosisTests {
    let ba = BuildProducts.executable("ba")

    /// A loopback port with nothing listening: bound, then closed.
    static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessProblem("socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw HarnessProblem("bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    struct HarnessProblem: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// A bounded loopback server (Python, at most 30 s and 10 connections) that answers every
    /// request with `response` (Python bytes expression) and prints its port.
    final class CannedServer {
        let process: ChildProcess
        let port: Int

        init(response: String) throws {
            let script = """
                import signal, socket, gzip
                signal.alarm(30)
                s = socket.socket()
                s.bind(("127.0.0.1", 0))
                s.listen(8)
                print(s.getsockname()[1], flush=True)
                for _ in range(10):
                    c, _ = s.accept()
                    c.settimeout(5)
                    try:
                        c.recv(65536)
                        c.sendall(\(response))
                    except OSError:
                        pass
                    c.close()
                """
            process = try ChildProcess("/usr/bin/env", ["python3", "-c", script])
            do {
                try process.wait("the canned server's port") { !$0.stdoutLines.isEmpty }
            } catch {
                process.kill()
                throw error
            }
            guard let port = Int(process.stdoutLines[0]) else {
                process.kill()
                throw HarnessProblem("the canned server printed no port: \(process.stdout)\(process.stderr)")
            }
            self.port = port
        }

        func stop() { process.kill() }
    }

    @Test func requestsCarryBasUserAgent() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        server.setFile("/a.bin", contents: [1, 2, 3])
        let output = try await runProcess(ba, ["fetch", server.url("/a.bin"), "-o", directory.path])
        #expect(output.status == 0, "\(output.stderr)")
        let agent = server.requests(for: "/a.bin").first?.header("User-Agent")
        #expect(
            agent?.hasPrefix("ba/") == true && agent?.contains("swift-background-assets") == true, "\(agent ?? "none")")
    }

    @Test func aProxyThatIsDownIsNamed() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let proxy = "http://127.0.0.1:\(try Self.closedPort())"
        for (variable, url) in [
            ("http_proxy", "http://127.0.0.1:9/a.bin"), ("https_proxy", "https://127.0.0.1:9/a.bin"),
        ] {
            let output = try await runProcess(
                ba, ["fetch", url, "-o", directory.path, "--foreground"], environment: [variable: proxy])
            #expect(output.status == 20, "\(output.stderr)")
            #expect(
                output.stderr.contains("cannot connect to the proxy \(proxy) (from $\(variable))"), "\(output.stderr)")
            #expect(output.stderr.contains("check that the proxy runs"), "\(output.stderr)")
        }
    }

    @Test func aProxyThatAnswers407IsNamedWithWhereCredentialsGo() async throws {
        let proxy = try CannedServer(
            response:
                #"b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"p\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n""#
        )
        defer { proxy.stop() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let address = "http://127.0.0.1:\(proxy.port)"
        // Plain http: the proxy's 407 is the response; https: the proxy refuses the CONNECT.
        for (variable, url) in [
            ("http_proxy", "http://127.0.0.1:9/a.bin"), ("https_proxy", "https://127.0.0.1:9/a.bin"),
        ] {
            let output = try await runProcess(
                ba, ["fetch", url, "-o", directory.path, "--foreground"], environment: [variable: address])
            #expect(output.status == 20, "\(output.stderr)")
            #expect(
                output.stderr.contains("the proxy \(address) (from $\(variable)) asks for credentials (407"),
                "\(output.stderr)")
            #expect(output.stderr.contains("\(variable)=http://USER:PASSWORD@HOST:PORT"), "\(output.stderr)")
            #expect(!output.stderr.contains("server answered 407"), "\(output.stderr)")
        }
    }

    @Test(arguments: ["gzip", "br"])
    func aServerThatEncodesAnywayIsRefusedNamingTheEncoding(encoding: String) async throws {
        let body = encoding == "gzip" ? "gzip.compress(b'x' * 10000)" : "b'\\x1b\\x0f\\x27\\x10' + b'x' * 32"
        let server = try CannedServer(
            response:
                "(lambda b: b'HTTP/1.1 200 OK\\r\\nContent-Encoding: \(encoding)\\r\\nContent-Length: ' + str(len(b)).encode() + b'\\r\\nConnection: close\\r\\n\\r\\n' + b)(\(body))"
        )
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let output = try await runProcess(
            ba, ["fetch", "http://127.0.0.1:\(server.port)/file.bin", "-o", directory.path, "--expected-size", "10000"])
        #expect(output.status == 20, "\(output.stderr)")
        #expect(output.stderr.contains("Content-Encoding: \(encoding)"), "\(output.stderr)")
        #expect(output.stderr.contains("Accept-Encoding: identity"), "\(output.stderr)")
        #expect(
            !FileManager.default.fileExists(atPath: directory.path + "/file.bin"), "no encoded bytes saved as the file")
    }
}
