import BAHashing
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The Python client (`clients/python`, standard library only) against a real basd and a real
/// loopback server: its examples, run as `docs/packs-from-any-language.md` says, make an
/// on-demand pack local with progress and read a file from it, then read it again with basd
/// stopped; its protocol errors are basd's codes.
@Suite("the Python client", .timeLimit(.minutes(3)))
struct PythonClientTests {
    let ba = BuildProducts.executable("ba")

    /// Runs `clients/python/examples/NAME` with the package on `PYTHONPATH`.
    static func example(_ name: String, _ arguments: [String], socket: String? = nil) async throws -> ProcessOutput {
        var environment = ["PYTHONPATH": BuildProducts.source("clients/python"), "PYTHONDONTWRITEBYTECODE": "1"]
        if let socket { environment["BA_SOCKET"] = socket }
        return try await runProcess(
            "/usr/bin/env", ["python3", BuildProducts.source("clients/python/examples/" + name)] + arguments,
            environment: environment)
    }

    @Test("ensure with progress, read, then read with basd stopped; an unknown pack is error 1006")
    func ensureReadOffline() async throws {
        let fixture = try await PackFixture.make()
        defer { fixture.remove() }
        let big = PackFixture.random(3 << 20, seed: 901)
        try fixture.write(pack: "base", policy: PackFixture.essential, files: ["a.bin": [1, 2, 3]])
        try fixture.write(pack: "levels", policy: PackFixture.onDemand, files: ["maps/one.bin": big])
        try await fixture.publish(["base", "levels"], version: 1, bundleSize: 1 << 20)
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        let install = try await runProcess(ba, ["install", fixture.appDirectory, "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")

        let expected = "read levels/maps/one.bin \(big.count) \(SHA256Hasher.hex(of: big))"
        let ensure = try await Self.example(
            "ensure_pack.py", [PackFixture.app, "levels", "levels/maps/one.bin"], socket: daemon.socketPath)
        #expect(ensure.status == 0, "\(ensure.stdout)\(ensure.stderr)\n\(daemon.standardError)")
        let lines = ensure.stdout.split(separator: "\n").map(String.init)
        let progress = lines.filter { $0.hasPrefix("progress ") }
        #expect(!progress.isEmpty, "no progress line: \(ensure.stdout)")
        #expect(lines.contains("local levels version 1"), "\(ensure.stdout)")
        #expect(lines.last == expected, "\(ensure.stdout)")

        // An unknown pack: basd's code, said by the client.
        let unknown = try await Self.example(
            "ensure_pack.py", [PackFixture.app, "nothing", "x"], socket: daemon.socketPath)
        #expect(unknown.status == 1 && unknown.stderr.hasPrefix("error 1006:"), "\(unknown.stdout)\(unknown.stderr)")

        // basd stops: the files are still read, from the disk.
        let state = daemon.stateDirectory
        daemon.stop()  // SIGKILL, the folder kept
        let offline = try await Self.example(
            "read_offline.py", [PackFixture.group, PackFixture.app, "levels", "levels/maps/one.bin", state])
        #expect(offline.status == 0, "\(offline.stdout)\(offline.stderr)")
        #expect(offline.stdout.contains("local packs [('base', 1), ('levels', 1)]"), "\(offline.stdout)")
        #expect(offline.stdout.split(separator: "\n").last.map(String.init) == expected, "\(offline.stdout)")
        // A path that leaves the pack, and one that is not there: refused, with the errno.
        let escape = try await Self.example(
            "read_offline.py", [PackFixture.group, PackFixture.app, "levels", "levels/../base/a.bin", state])
        #expect(escape.status == 1 && escape.stderr.contains("errno \(EINVAL)"), "\(escape.stderr)")
        let missing = try await Self.example(
            "read_offline.py", [PackFixture.group, PackFixture.app, "levels", "levels/maps/two.bin", state])
        #expect(missing.status == 1 && missing.stderr.contains("errno \(ENOENT)"), "\(missing.stderr)")
    }
}
