import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A pack's units are content-addressed (issue 34): the signed index fixes every bundle's bytes and
/// each chunk's SHA-256, so basd resumes a unit with `Range` whatever the server says about
/// versions, writes each frame into staging as it lands, and ends in the right version whatever a
/// lying CDN answers to a range. Real basd, real loopback servers: nginx without validators, and
/// small servers of the test's own for the misbehaving ones.
@Suite("asset packs resumed by content", .timeLimit(.minutes(5)))
struct PackResumeTests {
    let ba = BuildProducts.executable("ba")

    /// `files` as pack `levels` (on demand), built with bundles of `bundleSize` and chunks of
    /// `chunkSize` on average, published for `baseURL`; the app's manifest URL is that server's.
    func publish(
        _ fixture: PackFixture, files: [String: [UInt8]], baseURL: String, bundleSize: Int, chunkSize: Int
    ) async throws {
        try fixture.write(pack: "levels", policy: PackFixture.onDemand, files: files)
        let build = try await runProcess(
            ba,
            [
                "pack", "build", fixture.source + "/levels.json", "--version", "1", "-o", fixture.publish,
                "--bundle-size", String(bundleSize), "--chunk-size", String(chunkSize),
            ])
        #expect(build.status == 0, "\(build.stdout)\(build.stderr)")
        let published = try await runProcess(ba, ["pack", "publish", fixture.publish, "--base-url", baseURL])
        #expect(published.status == 0, "\(published.stdout)\(published.stderr)")
        let info: [String: Any] = [
            "CFBundleIdentifier": PackFixture.app, "CFBundleShortVersionString": "1.0",
            "BAAppGroupID": PackFixture.group, "BAManifestURL": baseURL + "/manifest.json",
            "BAHasManagedAssetPacks": true,
        ]
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: fixture.appDirectory + "/Info.plist"))
    }

    /// The bytes of version 1's bundles.
    func bundleBytes(_ fixture: PackFixture) throws -> Int {
        let folder = fixture.publish + "/packs/levels"
        return try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".bundle") }.reduce(0)
        { total, name in
            total + ((try FileManager.default.attributesOfItem(atPath: folder + "/" + name)[.size] as? Int) ?? 0)
        }
    }

    static func files(_ count: Int, size: Int, seed: UInt64) -> [String: [UInt8]] {
        Dictionary(
            uniqueKeysWithValues: (0..<count).map { ("f\($0).bin", PackFixture.random(size, seed: seed + UInt64($0))) })
    }

    /// Whether every file of `files` is in the installed pack with its bytes.
    static func installed(_ daemon: DaemonProcess, _ files: [String: [UInt8]]) -> Bool {
        files.allSatisfy { name, bytes in
            FileManager.default.contents(atPath: PackFixture.packPath(daemon, "levels") + "/levels/" + name)
                .map(Array.init) == bytes
        }
    }

    @Test(
        "kill -9 three times mid-install, nginx without ETag or Last-Modified: at most 1.05x the bundles' bytes fetched"
    )
    func killsWithoutValidators() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let files = Self.files(32, size: 1 << 20, seed: 500)
        // basd fetches through a proxy that lets through a quarter of the pack (and the metadata)
        // at a time: each kill lands mid-install however fast or slow the machine. nginx's small
        // send buffer keeps what it counts as sent close to what the proxy let through.
        let nginx = try await Nginx.start(
            root: fixture.publish, directory: fixture.directory.path, validators: false, sendBuffer: "8k")
        defer { nginx.stop() }
        let slack = 2 << 20
        let proxy = try GatedProxy(upstreamPort: nginx.port, budget: 0)
        defer { proxy.stop() }
        try await publish(fixture, files: files, baseURL: proxy.baseURL, bundleSize: 1 << 20, chunkSize: 16_384)
        let bundles = try bundleBytes(fixture)
        let head = try await runProcess(
            "/usr/bin/curl", ["-s", "-D", "-", "-o", "/dev/null", nginx.baseURL + "/packs/levels/1-0.bundle"])
        #expect(head.stdout.hasPrefix("HTTP/1.1 200"), "\(head.stdout)")
        #expect(!head.stdout.lowercased().contains("etag"), "\(head.stdout)")
        #expect(!head.stdout.lowercased().contains("last-modified"), "\(head.stdout)")
        // That look is not basd's: its bytes are not counted.
        try await nginx.child.waiting("nginx to log the look", timeout: 10) { _ in nginx.requests.count >= 1 }
        let checked = nginx.requests.count

        // The manifest and index (ba install reads them) and the first quarter.
        proxy.allow(upTo: bundles / 4 + slack)
        let daemon = try await DaemonProcess.start()
        var running = daemon
        defer { running.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        let ensure = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "levels", "--no-wait", "--socket", daemon.socketPath])
        #expect(ensure.status == 0, "\(ensure.stdout)\(ensure.stderr)")
        var logs = ""
        for quarter in 1...3 {
            // The metadata and `quarter` quarters of the bundles, with room for what each kill
            // loses in flight; never the whole pack (3/4 of it and 6 MiB are less).
            proxy.allow(upTo: bundles * quarter / 4 + slack * quarter)
            // Killed once the proxy holds and basd has taken in all it let through (the bytes in
            // place the same in two looks): the kill loses no more than frames cut in two.
            var previous = -1
            let packs = try await fixture.waitForPacks(running, "a \(quarter)/4 of the pack in staging") { packs in
                guard let present = packs["levels"]?["bytesPresent"] as? Int,
                    let total = packs["levels"]?["bytesTotal"] as? Int, total > 0
                else { return false }
                defer { previous = present }
                return present * 4 >= total * quarter && proxy.isHeld && present == previous
            }
            running.send(SIGKILL)
            #expect(running.waitForExit(timeout: 20) != nil)
            // Killed mid-install: the kill proves something only if the pack was not local yet.
            #expect(packs["levels"]?["localVersion"] as? Int == nil, "\(packs)")
            logs += running.standardError
            running = try await running.restarted()
        }
        proxy.open()
        // Three interrupted starts in a row park the job (so that basd serves everyone else):
        // ensure tries again, from what staging holds.
        let again = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "levels", "--no-wait", "--socket", running.socketPath])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        _ = try await fixture.waitForPacks(running, "version 1 after three kills") {
            $0["levels"]?["localVersion"] as? Int == 1
        }
        #expect(Self.installed(running, files))
        let units = nginx.requests.dropFirst(checked).filter(\.isUnit)
        let fetched = units.reduce(0) { $0 + $1.bytes }
        let ratio = Double(fetched) / Double(bundles)
        #expect(fetched >= bundles, "the access log has \(units.count) unit requests")
        #expect(ratio <= 1.05, "fetched \(fetched) bytes for \(bundles) bytes of bundles (\(ratio)x)")
        logs += running.standardError
        // Resumed with ranges although nginx sent no validator.
        #expect(
            units.contains { $0.status == 206 && !$0.range.isEmpty },
            "\(units.map { "\($0.status) \($0.range) \($0.path) \($0.bytes)" })")
        #expect(logs.contains("resuming version 1"), "\(logs)")
    }

    /// A lying CDN, as ``MisbehavingServer`` serves it.
    struct Misbehaviour: CustomStringConvertible, Sendable {
        var mode: String
        var shift = 0
        /// What basd says in its log about the bytes it fetched again (nil: nothing to say).
        var note: String?
        var description: String { shift == 0 ? mode : "\(mode) \(shift)" }
    }

    static let misbehaviours = [
        Misbehaviour(mode: "ignore-range", note: "a 200 to Range: bytes="),
        Misbehaviour(mode: "wrong-range", shift: -5_000, note: "a 206 from"),
        Misbehaviour(mode: "wrong-range", shift: 5_000, note: "a request without a range"),
        Misbehaviour(mode: "truncate"),
        Misbehaviour(mode: "redirect"),
    ]

    @Test(
        "a CDN that ignores Range, answers the wrong range, truncates, or redirects every object: a correct install",
        arguments: misbehaviours)
    func misbehavingCDN(_ behaviour: Misbehaviour) async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let files = Self.files(8, size: 256 << 10, seed: 900)
        let directory = fixture.directory.path + "/server"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Frames of 64 KiB at most (chunks of 16 KiB on average): a cut after 100,000 bytes always
        // leaves a whole frame in staging, so each request gets further.
        let server = try MisbehavingServer(
            root: fixture.publish, mode: behaviour.mode, shift: behaviour.shift, cut: 100_000, directory: directory)
        defer { server.stop() }
        try await publish(fixture, files: files, baseURL: server.baseURL, bundleSize: 256 << 10, chunkSize: 16_384)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        let ensure = try await runProcess(
            ba, ["packs", "ensure", PackFixture.app, "levels", "--socket", daemon.socketPath])
        #expect(ensure.status == 0, "\(ensure.stdout)\(ensure.stderr)\n\(daemon.standardError)")
        let packs = try await fixture.packs(daemon)
        #expect(packs["levels"]?["localVersion"] as? Int == 1, "\(packs)")
        #expect(Self.installed(daemon, files))
        let units = server.requests.filter(\.isUnit)
        // Every unit's first response was cut: what followed resumed it with a range.
        #expect(units.contains { !$0.range.isEmpty && $0.range != "bytes=0-" }, "\(units.map(\.range))")
        if let note = behaviour.note {
            try await daemon.child.waiting("basd to say why it fetched bytes again", timeout: 20) {
                $0.stderr.contains(note) && $0.stderr.contains("fetched again and dropped")
            }
        }
        if behaviour.mode == "redirect" {
            #expect(units.filter { !$0.path.hasPrefix("/m/") }.allSatisfy { $0.status == 302 })
            #expect(units.contains { $0.path.hasPrefix("/m/") && $0.status == 206 })
        }
        if behaviour.mode == "truncate" {
            // Cut at every response, yet each frame landed once: no unit was fetched again whole.
            #expect(units.allSatisfy { $0.bytes <= 100_000 })
        }
    }
}
