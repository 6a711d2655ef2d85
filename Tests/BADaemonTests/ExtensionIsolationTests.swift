import BAAssetServer
import BATestSupport
import Foundation
import Testing

/// What an extension's runner inherits from basd (docs/threat-model.md): its standard streams and
/// the protocol socket, nothing of basd's own.
@Suite("what an extension inherits from basd", .timeLimit(.minutes(2)))
struct ExtensionIsolationTests {
    let ba = BuildProducts.executable("ba")

    /// `fd -> readlink target` of every open descriptor of process `pid`.
    static func descriptors(of pid: Int32) -> [Int: String] {
        let folder = "/proc/\(pid)/fd"
        var result: [Int: String] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            if let fd = Int(name),
                let target = try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + name)
            {
                result[fd] = target
            }
        }
        return result
    }

    @Test("an extension basd runs holds none of basd's sockets (listening or client) and none of its files")
    func noneOfBasdsDescriptors() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let fixture = try SampleAppFixture(server: server, assets: [], extensionLibrary: "BATestDescriptors")
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }
        // Another client stays connected while the extension runs: its connection must not leak either.
        let watcher = try ChildProcess(
            BuildProducts.executable("ba"), ["events", "--follow", "--socket", daemon.socketPath])
        defer { watcher.kill() }
        try watcher.wait("subscribed") { $0.stderr.contains("following events") }

        let install = try await runProcess(
            ba, ["install", fixture.appDirectory, "--no-wait", "--socket", daemon.socketPath])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        let line = try #require(
            install.stdout.split(separator: "\n").first { $0.contains("descriptors:") }, "\(install.stdout)")
        var inherited: [Int: String] = [:]
        for field in line.split(separator: " ") where field.contains("=") {
            let parts = field.split(separator: "=", maxSplits: 1)
            if let fd = Int(parts[0]) { inherited[fd] = String(parts[1]) }
        }
        #expect(inherited[3]?.hasPrefix("socket:") == true, "fd 3 is the runner's protocol socket: \(inherited)")

        let basd = Self.descriptors(of: daemon.pid)
        let basdSockets = Set(basd.values.filter { $0.hasPrefix("socket:") })
        #expect(basdSockets.count >= 2, "basd listens and has clients: \(basd)")
        let shared = inherited.filter { basdSockets.contains($0.value) }
        #expect(shared.isEmpty, "the extension holds basd's sockets: \(shared)")
        // The app group container is the extension's to use (the runner opens its lock file);
        // basd's database and its own lock are not.
        let stateFiles = inherited.filter {
            $0.value.hasPrefix(daemon.stateDirectory + "/") && !$0.value.hasPrefix(daemon.stateDirectory + "/groups/")
        }
        #expect(stateFiles.isEmpty, "the extension holds files of basd's state: \(stateFiles)")
        #expect(inherited.keys.allSatisfy { $0 <= 3 || !(inherited[$0] ?? "").hasPrefix("socket:") }, "\(inherited)")
    }
}
