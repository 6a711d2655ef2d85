import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The real `basd` executable, run as a process with a temporary state folder and socket.
@Suite("basd process")
struct DaemonProcessTests {
    @Test("hello, then status reports the version, connections and store counts")
    func handshakeAndStatus() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let client = try TestClient(socketPath: daemon.socketPath)
        try client.handshake()
        let status = try client.status()
        #expect(status.protocolVersion == DaemonProtocol.version)
        #expect(status.pid == daemon.pid)
        #expect(status.connections == 1)
        #expect(status.registeredApps == 0)
        #expect(status.activeDownloads == 0)
        #expect(status.uptimeSeconds >= 0)
        #expect(FileManager.default.fileExists(atPath: daemon.stateDirectory + "/state.sqlite"))
    }

    @Test("a request before hello gets error 56 and the connection is closed")
    func statusBeforeHello() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let client = try TestClient(socketPath: daemon.socketPath)
        let result = try client.call(.status)
        #expect(
            result
                == .error(
                    code: 56, message: "\"status\" before \"hello\": the first request on a connection must be hello"))
        #expect(try client.receive() == .closed)
    }

    @Test("malformed input gets an error or a close, and basd keeps serving everyone")
    func malformedInput() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let bystander = try TestClient(socketPath: daemon.socketPath)
        try bystander.handshake()

        var random = SeededGenerator(state: 42)
        let garbage = (0..<64).map { _ in UInt8.random(in: 0...255, using: &random) }
        let invalidJSON = Array("{not json".utf8)
        let hello = ClientMessage(id: 9, request: .hello(protocolVersion: 999, client: ClientInfo(role: .cli, pid: 1)))
        let cases: [(name: String, bytes: [UInt8], expectedCode: Int?)] = [
            ("random bytes", garbage, nil),
            ("oversized length prefix", [0x7f, 0xff, 0xff, 0xff, 1, 2, 3], DaemonErrorCode.invalidFrame.rawValue),
            ("empty frame", [0, 0, 0, 0], DaemonErrorCode.invalidFrame.rawValue),
            (
                "invalid JSON", [0, 0, 0, UInt8(invalidJSON.count)] + invalidJSON,
                DaemonErrorCode.invalidMessage.rawValue
            ),
            (
                "unknown protocol version", try DaemonProtocol.encode(hello),
                DaemonErrorCode.callerConnectionNotAccepted.rawValue
            ),
        ]
        for (name, bytes, expectedCode) in cases {
            let client = try TestClient(socketPath: daemon.socketPath)
            client.sendRaw(bytes)
            client.finishSending()  // so random bytes that announce a long frame still end
            var replies: [TestClient.Reply] = []
            for _ in 0..<3 {  // at most an error, then the close
                let reply = try client.receive()
                replies.append(reply)
                if reply == .closed { break }
            }
            #expect(replies.last == .closed, "\(name): the connection was not closed")
            if let expectedCode {
                guard case .message(.response(_, .error(let code, _))) = replies.first else {
                    Issue.record("\(name): no error reply, got \(replies)")
                    continue
                }
                #expect(code == expectedCode, "\(name)")
            }
            let fresh = try TestClient(socketPath: daemon.socketPath)
            try fresh.handshake()
            _ = try fresh.status()
            _ = try bystander.status()
        }
    }

    @Test("the socket is mode 0600 in a 0700 folder; the state folder is 0700")
    func socketMode() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        func mode(_ path: String) throws -> Int {
            try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        }
        #expect(try mode(daemon.socketPath) == 0o600)
        #expect(try mode((daemon.socketPath as NSString).deletingLastPathComponent) == 0o700)
        #expect(try mode(daemon.stateDirectory) == 0o700)
    }

    @Test("a second basd on the same state folder exits non-zero naming the lock")
    func secondDaemonRefused() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let second = try runDaemonToExit(
            stateDirectory: daemon.stateDirectory, socketPath: daemon.directory.path + "/other.sock")
        #expect(second.status != 0)
        #expect(second.stderr.contains(daemon.stateDirectory + "/basd.lock"))
        #expect(second.stderr.contains("held by pid \(daemon.pid)"))
        #expect(!second.stdout.contains("listening"))
        // The first one's socket was left alone.
        let client = try TestClient(socketPath: daemon.socketPath)
        try client.handshake()
    }

    @Test("SIGTERM: exit 0, connections closed, socket removed; a restart reuses the state folder")
    func sigterm() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let client = try TestClient(socketPath: daemon.socketPath)
        try client.handshake()
        daemon.send(SIGTERM)
        #expect(daemon.waitForExit(timeout: 20) == 0)
        #expect(try client.receive() == .closed)
        #expect(!FileManager.default.fileExists(atPath: daemon.socketPath))

        let again = try await DaemonProcess.start(directory: daemon.directory)
        defer { again.kill() }
        let next = try TestClient(socketPath: again.socketPath)
        try next.handshake()
        again.send(SIGINT)
        #expect(again.waitForExit(timeout: 20) == 0)
    }

    @Test("a stale socket file left by a killed basd is replaced")
    func staleSocket() async throws {
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        daemon.send(SIGKILL)
        #expect(daemon.waitForExit(timeout: 20) != nil)
        #expect(FileManager.default.fileExists(atPath: daemon.socketPath))
        let again = try await DaemonProcess.start(directory: daemon.directory)
        defer { again.kill() }
        let client = try TestClient(socketPath: again.socketPath)
        try client.handshake()
    }
}
