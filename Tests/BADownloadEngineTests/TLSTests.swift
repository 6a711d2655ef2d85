import BADownloadEngine
import BATestSupport
import Foundation
import Testing

/// https end to end: a real TLS server on loopback with a certificate from a CA made for the
/// test, trusted through `Trust.caFile`, and a pinned public key.
@Suite(.timeLimit(.minutes(1))) struct TLSTests {
    /// A CA, a server certificate for 127.0.0.1 signed by it, and the server key's pin.
    struct Certificates {
        let directory: TemporaryDirectory
        var ca: String { directory.url.appendingPathComponent("ca.pem").path }
        var certificate: String { directory.url.appendingPathComponent("server.pem").path }
        var key: String { directory.url.appendingPathComponent("server.key").path }
        let pin: String
    }

    func makeCertificates() async throws -> Certificates {
        let directory = try TemporaryDirectory()
        let run = { (command: String) async throws in
            let output = try await runProcess("/bin/sh", ["-c", command], currentDirectory: directory.path)
            #expect(output.status == 0, "\(command): \(output.stderr)")
        }
        try directory.write("san.ext", "subjectAltName=IP:127.0.0.1\n")
        let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
        try await run("openssl req -x509 \(ec) -keyout ca.key -out ca.pem -days 1 -subj /CN=ba-test-ca 2>/dev/null")
        try await run("openssl req \(ec) -keyout server.key -out server.csr -subj /CN=127.0.0.1 2>/dev/null")
        try await run(
            "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 -extfile san.ext 2>/dev/null"
        )
        let pin = try await runProcess(
            "/bin/sh",
            [
                "-c",
                "openssl x509 -in server.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
            ],
            currentDirectory: directory.path)
        return Certificates(
            directory: directory, pin: "sha256//" + pin.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Starts a bounded HTTPS server (at most 10 requests, 30 s) serving `root`; returns it and its port.
    func startServer(_ certificates: Certificates, root: String) throws -> (ChildProcess, Int) {
        let script = """
            import functools, http.server, signal, ssl, sys
            signal.alarm(30)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[1], sys.argv[2])
            class Handler(http.server.SimpleHTTPRequestHandler):
                def log_message(self, *args): pass
            server = http.server.HTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=sys.argv[3]))
            server.socket = context.wrap_socket(server.socket, server_side=True)
            server.timeout = 10
            print(server.server_address[1], flush=True)
            for _ in range(10):
                server.handle_request()
            """
        let server = try ChildProcess(
            "/usr/bin/env", ["python3", "-c", script, certificates.certificate, certificates.key, root])
        // The first line is the port (the server is listening once it is printed).
        do {
            try server.wait("the port") { !$0.stdoutLines.isEmpty }
        } catch {
            server.kill()
            throw error
        }
        let port = try #require(Int(server.stdoutLines[0]))
        return (server, port)
    }

    @Test func httpsWithACustomCAAndAPinnedKey() async throws {
        let certificates = try await makeCertificates()
        defer { certificates.directory.remove() }
        let root = certificates.directory.url.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let data = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0) })
        try data.write(to: root.appendingPathComponent("asset.bin"))
        let (server, port) = try startServer(certificates, root: root.path)
        defer { server.kill() }

        let engine = DownloadEngine()
        defer { engine.shutdown() }
        let events = EventReader(engine)
        let url = "https://127.0.0.1:\(port)/asset.bin"
        func fetch(_ id: String, trust: DownloadRequest.Trust) async -> DownloadEvent? {
            let destination = certificates.directory.url.appendingPathComponent(id).path
            engine.add(DownloadRequest(id: id, url: url, destination: destination, isForeground: true, trust: trust))
            return await events.end(of: id)
        }

        guard
            case .finished(_, let path, let size, _, _) = await fetch("trusted", trust: .init(caFile: certificates.ca))
        else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(size == 50_000 && FileManager.default.contents(atPath: path) == data)

        guard case .failed(_, let untrusted) = await fetch("untrusted", trust: .init()) else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(untrusted.code == .tls, "\(untrusted)")

        guard
            case .finished = await fetch(
                "pinned", trust: .init(caFile: certificates.ca, pinnedPublicKey: certificates.pin))
        else {
            Issue.record("\(events.seen)")
            return
        }

        let wrongPin = "sha256//" + Data(repeating: 0, count: 32).base64EncodedString()
        guard
            case .failed(_, let pinned) = await fetch(
                "wrong-pin", trust: .init(caFile: certificates.ca, pinnedPublicKey: wrongPin))
        else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(pinned.code == .tls, "\(pinned)")
    }

    /// A certificate for other names than the URL's host was reported as "unspecified
    /// certificate verification error (X.509 error 1)" with the private-CA hint, which does not
    /// fix it. The server's certificate names only 127.0.0.1; the URL says localhost.
    @Test func aCertificateForOtherNamesIsReportedAsSuchWithTheRightHint() async throws {
        let certificates = try await makeCertificates()
        defer { certificates.directory.remove() }
        let root = certificates.directory.url.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data([1, 2, 3]).write(to: root.appendingPathComponent("asset.bin"))
        let (server, port) = try startServer(certificates, root: root.path)
        defer { server.kill() }

        let engine = DownloadEngine()
        defer { engine.shutdown() }
        let events = EventReader(engine)
        let url = "https://localhost:\(port)/asset.bin"
        engine.add(
            DownloadRequest(
                id: "other-name", url: url, destination: certificates.directory.path + "/other-name",
                isForeground: true, trust: .init(caFile: certificates.ca)))
        guard case .failed(_, let error) = await events.end(of: "other-name") else {
            Issue.record("\(events.seen)")
            return
        }
        #expect(error.code == .tls && error.tlsProblem == .hostnameMismatch, "\(error)")
        #expect(error.message.contains("the server's certificate is for other names than localhost"), "\(error)")
        #expect(error.message.contains("target host name"), "libcurl's words: \(error)")
        #expect(!error.message.contains("X.509 error 1)"), "\(error)")
        let hint = try #require(error.hint(trustingACA: "TRUST", pinnedKey: "PIN"))
        #expect(!hint.contains("TRUST") && hint.contains("host name the certificate names"), "\(hint)")

        // ba fetch: the same words; an untrusted certificate gets the --cacert hint, this one not.
        let ba = BuildProducts.executable("ba")
        let mismatch = try await runProcess(
            ba, ["fetch", url, "-o", certificates.directory.path + "/out", "--cacert", certificates.ca])
        #expect(mismatch.status == 20, "\(mismatch.stderr)")
        #expect(mismatch.stderr.contains("other names than localhost"), "\(mismatch.stderr)")
        #expect(!mismatch.stderr.contains("--cacert"), "\(mismatch.stderr)")
        let untrusted = try await runProcess(
            ba, ["fetch", "https://127.0.0.1:\(port)/asset.bin", "-o", certificates.directory.path + "/out"])
        #expect(untrusted.status == 20, "\(untrusted.stderr)")
        #expect(untrusted.stderr.contains("--cacert FILE.pem"), "\(untrusted.stderr)")
    }
}
