import BADaemonProtocol
import BATestSupport
import CBAClient
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// libba_client (`ba_client.h`, plain C) against a real basd and a real loopback server: a probe
/// lists without marking the app launched and may not ensure; the app ensures an on-demand pack
/// with progress, reads it, follows its events through the descriptor, removes it; basd's death
/// is a hangup on the descriptor and error 56; the files are read again with basd gone.
@Suite("the C client against basd", .timeLimit(.minutes(3)))
struct CClientTests {
    static func launched(_ daemon: DaemonProcess) throws -> Bool? {
        let cli = try daemon.cliClient()
        defer { cli.close() }
        guard case .apps(let apps) = try cli.call(.listApps) else { throw HarnessError("listApps not answered") }
        return apps.first { $0.bundleIdentifier == PackFixture.app }?.launched
    }

    @Test("probe, ensure with progress, read, events on the descriptor, remove, hangup, offline read")
    func wholeSession() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let big = PackFixture.random(3 << 20, seed: 907)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": [1, 2, 3]])
        try fixture.write(pack: "levels", policy: PackFixture.onDemand, files: ["maps/one.bin": big])
        try await fixture.publish(["base", "levels"], version: 1, bundleSize: 1 << 20)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(
            fixture.ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        #expect(try Self.launched(daemon) == false)

        // A probe (C, then Python): lists, may not ensure, and the app stays unlaunched.
        var error = clientError()
        let probe = ba_client_connect_probe(PackFixture.app, daemon.socketPath, &error)
        #expect(probe != nil, "\(error.code): \(error.text)")
        var listed: UnsafeMutablePointer<ba_client_pack_list>?
        #expect(ba_client_packs(probe, &listed, &error) == 0, "\(error.text)")
        let ids = (0..<(listed?.pointee.count ?? 0)).compactMap {
            listed?.pointee.packs[$0].map { String(cString: $0.pointee.id) }
        }
        #expect(Set(ids) == ["base", "levels"], "\(ids)")
        ba_client_pack_list_free(listed)
        #expect(ba_client_follow(probe, &error) == 0, "\(error.text)")
        #expect(ba_client_ensure(probe, "levels", 0, nil, nil, 5000, nil, &error) == -1)
        #expect(error.code == 56, "\(error.code): \(error.text)")
        #expect(ba_client_remove(probe, "base", &error) == -1 && error.code == 56, "\(error.text)")
        ba_client_close(probe)
        let python = try await runProcess(
            "/usr/bin/python3",
            [
                "-c",
                "import sys; from background_assets import AppClient, BasdError\n"
                    + "c = AppClient(sys.argv[1], probe=True)\nprint(sorted(p['assetPackID'] for p in c.packs()))\n"
                    + "try:\n    c.ensure('levels')\nexcept BasdError as e:\n    print('refused', e.code)\n",
                PackFixture.app,
            ],
            environment: [
                "PYTHONPATH": BuildProducts.source("clients/python"), "PYTHONDONTWRITEBYTECODE": "1",
                "BA_SOCKET": daemon.socketPath,
            ])
        #expect(python.stdout == "['base', 'levels']\nrefused 56\n", "\(python.stdout)\(python.stderr)")
        #expect(try Self.launched(daemon) == false, "a probe marked the app launched")

        // The app: its hello marks it launched.
        let client = ba_client_connect(PackFixture.app, daemon.socketPath, &error)
        #expect(client != nil, "\(error.code): \(error.text)")
        defer { ba_client_close(client) }
        #expect(try Self.launched(daemon) == true)
        let container = String(cString: ba_client_app_group_container(client))
        #expect(container.hasSuffix("/groups/" + PackFixture.group), "\(container)")

        let log = ProgressLog()
        var pack: UnsafeMutablePointer<ba_client_pack>?
        let ensured = withExtendedLifetime(log) {
            ba_client_ensure(
                client, "levels", 0, ProgressLog.callback, Unmanaged.passUnretained(log).toOpaque(), 120_000, &pack,
                &error)
        }
        #expect(ensured == 0, "\(error.code): \(error.text)\n\(daemon.standardError)")
        #expect(!log.calls.isEmpty && log.calls.allSatisfy { $0.1 > 0 && $0.0 <= $0.1 }, "\(log.calls)")
        #expect(pack?.pointee.local_version == 1 && pack?.pointee.path != nil)
        #expect((pack?.pointee.status_flags ?? 0) & UInt32(BA_CLIENT_STATUS_DOWNLOADED.rawValue) != 0)
        ba_client_pack_free(pack)

        var data: UnsafeMutableRawPointer?
        var size = 0
        #expect(
            ba_client_read(client, "levels", "levels/maps/one.bin", 8 << 20, &data, &size, &error) == 0, "\(error.text)"
        )
        #expect(size == big.count && data.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } == big)
        free(data)
        #expect(ba_client_read(client, "levels", "levels/maps/one.bin", 1000, &data, &size, &error) == -1)
        #expect(error.code == 2000 && error.sys_errno == EFBIG, "\(error.text)")

        // An unknown pack: 1006, as basd says it.
        #expect(ba_client_ensure(client, "nothing", 0, nil, nil, 5000, nil, &error) == -1 && error.code == 1006)
        var checked: UnsafeMutablePointer<ba_client_pack_list>?
        #expect(ba_client_check_for_updates(client, &checked, &error) == 0, "\(error.text)")
        #expect((checked?.pointee.count ?? 0) == 2)
        ba_client_pack_list_free(checked)

        // Remove: its `removed` event comes through the descriptor.
        while ba_client_pending_events(client) > 0 {
            var stale: UnsafeMutablePointer<ba_client_event>?
            _ = ba_client_next_event(client, &stale, &error)
            ba_client_event_free(stale)
        }
        #expect(ba_client_remove(client, "levels", &error) == 0, "\(error.text)")
        var removed = false
        for _ in 0..<50 where !removed {
            var event: UnsafeMutablePointer<ba_client_event>?
            if ba_client_pending_events(client) == 0 {
                var ready = pollfd(fd: ba_client_fd(client), events: Int16(POLLIN), revents: 0)
                #expect(poll(&ready, 1, 10_000) == 1)
            }
            #expect(ba_client_next_event(client, &event, &error) >= 0, "\(error.text)")
            if let event {
                removed =
                    event.pointee.kind == BA_CLIENT_EVENT_REMOVED && String(cString: event.pointee.pack_id) == "levels"
            }
            ba_client_event_free(event)
        }
        #expect(removed)
        #expect(ba_client_local_version(container, PackFixture.app, "levels") == -1)
        #expect(ba_client_local_version(container, PackFixture.app, "base") == 1)

        // basd dies: the descriptor says hangup, the next read says 56.
        let state = daemon.stateDirectory
        daemon.stop()
        var ready = pollfd(fd: ba_client_fd(client), events: Int16(POLLIN), revents: 0)
        #expect(poll(&ready, 1, 10_000) == 1 && ready.revents & Int16(POLLHUP | POLLIN) != 0)
        var event: UnsafeMutablePointer<ba_client_event>?
        #expect(ba_client_next_event(client, &event, &error) == -1 && error.code == 56, "\(error.text)")
        #expect(ba_client_packs(client, &listed, &error) == -1 && error.code == 56)

        // Without basd: the files, from the disk.
        var offline = [CChar](repeating: 0, count: 4096)
        #expect(ba_client_group_container(PackFixture.group, state, &offline, offline.count, &error) == 0)
        #expect(text(of: offline) == container)
        #expect(ba_client_read_file(container, PackFixture.app, "base", "base/a.bin", 100, &data, &size, &error) == 0)
        #expect(size == 3 && data.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } == [1, 2, 3])
        free(data)
    }

    @Test("basd going away mid-ensure: the call returns 56 after the progress it saw")
    func basdDiesMidEnsure() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let downloading =
            #"{"type":"response","id":3,"result":{"type":"packs","packs":{"packs":[{"assetPackID":"levels","status":"downloadAvailable,downloading"}],"problems":[]}}}"#
        let progress =
            #"{"type":"packEvent","packEvent":{"kind":"progress","assetPackID":"levels","bytesPresent":10,"bytesTotal":100}}"#
        let fake = try FakeBasd(
            folder: folder.path,
            steps: [
                .read, .write(FakeBasd.welcome()), .read,
                .write(FakeBasd.frame(#"{"type":"response","id":2,"result":{"type":"packs","packs":{"packs":[]}}}"#)),
                .read, .write(FakeBasd.frame(progress) + FakeBasd.frame(downloading)),
            ])
        var error = clientError()
        let client = ba_client_connect("com.example.game", fake.path, &error)
        #expect(client != nil, "\(error.text)")
        defer { ba_client_close(client) }
        let log = ProgressLog()
        let result = withExtendedLifetime(log) {
            ba_client_ensure(
                client, "levels", 0, ProgressLog.callback, Unmanaged.passUnretained(log).toOpaque(), 10_000, nil, &error
            )
        }
        fake.finish()
        #expect(result == -1 && error.code == 56, "\(error.code) \(error.text)")
        #expect(log.calls.count == 1 && log.calls.first?.0 == 10 && log.calls.first?.1 == 100)
        #expect(fake.requests.count == 3 && fake.requests[0].contains(#""role":"app""#), "\(fake.requests)")
        #expect(fake.requests[2].contains(#""action":"ensure","pack":"levels""#), "\(fake.requests)")
    }

    /// What basd's answer to the hello is, and the code the connect must fail with (nil: it
    /// connects).
    static let hostileAnswers: [(String, [UInt8], Int32?)] = {
        let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        let many = "[" + Array(repeating: "0", count: 140_000).joined(separator: ",") + "]"
        let fine =
            String(repeating: "[", count: 28) + Array(repeating: "0", count: 100_000).joined(separator: ",")
            + String(repeating: "]", count: 28)
        /// A welcome whose `extra` member (4 deep) is `value`.
        func welcome(with value: String) -> [UInt8] {
            FakeBasd.frame(
                #"{"type":"response","id":1,"result":{"type":"welcome","welcome":{"extra":\#(value)}}}"#)
        }
        return [
            ("a frame over 1 MiB", [0x00, 0x10, 0x00, 0x01] + [UInt8](repeating: 0x20, count: 16), 1000),
            ("a frame of length 0", [0, 0, 0, 0], 1000),
            ("a truncated frame, then close", [0, 0, 0, 100] + Array("{\"type\":".utf8), 56),
            // Each of these is a welcome but for the one thing wrong: only that thing refuses it.
            ("nested 40 deep", welcome(with: deep), 1001),
            ("140,000 values", welcome(with: many), 1001),
            ("nested 28 deep, 100,000 values", welcome(with: fine), nil),
            (
                "a NUL in a string",
                FakeBasd.frame(
                    #"{"type":"response","id":1,"result":{"type":"welcome","welcome":{"appGroupContainer":"/a\u0000b"}}}"#
                ),
                1001
            ),
            ("bad UTF-8", FakeBasd.frame(Array(#"{"type":"res"#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8)), 1001),
            ("a raw newline in a string", FakeBasd.frame("{\"type\":\"a\nb\"}"), 1001),
            ("a lone surrogate", FakeBasd.frame(#"{"type":"\ud800"}"#), 1001),
            ("not an object", FakeBasd.frame("[1,2]"), 1001),
            ("text after the object", FakeBasd.frame(#"{"type":"x"} {}"#), 1001),
            ("a truncated object", FakeBasd.frame(#"{"type":"response","id":1"#), 1001),
            ("a number with a leading zero", welcome(with: "01"), 1001),
            ("a number over 64 characters", welcome(with: String(repeating: "1", count: 65)), 1001),
            (
                "basd's error answer",
                FakeBasd.frame(
                    #"{"type":"response","id":1,"result":{"type":"error","code":55,"message":"not registered"}}"#), 55
            ),
            (
                "an unknown frame, then the welcome",
                FakeBasd.frame(#"{"type":"event","event":{"x":1e400}}"#) + FakeBasd.welcome(), nil
            ),
            ("the welcome", FakeBasd.welcome(container: "/srv/\u{00e9}\\u00e9\\ud83d\\ude00"), nil),
        ]
    }()

    @Test("what a hostile basd sends is refused with its code, and the connection closed")
    func hostileFrames() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        for (index, (what, answer, code)) in Self.hostileAnswers.enumerated() {
            let socketFolder = folder.path + "/\(index)"
            try FileManager.default.createDirectory(atPath: socketFolder, withIntermediateDirectories: true)
            let fake = try FakeBasd(folder: socketFolder, steps: [.read, .write(answer)])
            var error = clientError()
            let client = ba_client_connect("com.example.game", fake.path, &error)
            fake.finish()
            if let code {
                #expect(client == nil && error.code == code, "\(what): \(error.code) \(error.text)")
            } else {
                #expect(client != nil, "\(what): \(error.code) \(error.text)")
                if what == "the welcome" {
                    #expect(String(cString: ba_client_app_group_container(client)) == "/srv/\u{00e9}\u{00e9}\u{1F600}")
                }
            }
            ba_client_close(client)
        }
    }
}
