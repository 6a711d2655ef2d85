import BAAssetServer
import BATestSupport
import Foundation
import Testing

/// The Apple-style `@main` extension of `Tests/AppleCompatibilityExtension` (written as for Apple's
/// framework, built in Swift 5 mode) under a real basd: installed, woken for its finished
/// download, and asked again for a language change (`ba simulate language-change`).
@Suite("an Apple-style @main extension under basd", .timeLimit(.minutes(3)))
struct AppleStyleExtensionTests {
    let ba = BuildProducts.executable("ba")
    /// The group the Apple-style extension's code names (as Apple's samples hard-code theirs).
    static let group = "group.com.example.applestyle"

    func report(_ daemon: DaemonProcess, _ arguments: [String]) async throws -> [String: Any] {
        let output = try await runProcess(ba, arguments + ["--json", "--socket", daemon.socketPath])
        let first = output.stdout.split(separator: "\n").first.map(String.init) ?? ""
        guard let object = (try? JSONSerialization.jsonObject(with: Data(first.utf8))) as? [String: Any],
            let report = object["report"] as? [String: Any]
        else {
            throw HarnessError(
                "ba \(arguments): \(output.status) \(output.stdout)\(output.stderr)\n\(daemon.standardError)")
        }
        return report
    }

    static func scheduled(_ report: [String: Any]) -> [String: Bool] {
        var result: [String: Bool] = [:]
        for entry in report["scheduled"] as? [[String: Any]] ?? [] {
            guard let download = entry["download"] as? [String: Any], let identifier = download["identifier"] as? String
            else { continue }
            result[identifier] = download["isEssential"] as? Bool ?? false
        }
        return result
    }

    static func refusedCodes(_ report: [String: Any]) -> [String: Int] {
        var result: [String: Int] = [:]
        for entry in report["refused"] as? [[String: Any]] ?? [] {
            result[entry["identifier"] as? String ?? ""] = entry["code"] as? Int ?? -1
        }
        return result
    }

    @Test("install schedules its essential download, the finished file lands in the group, language-change asks again")
    func installFinishAndLanguageChange() async throws {
        let server = try await AssetServer.start()
        defer { Task { try? await server.shutdown() } }
        let catalog = SampleAppFixture.bytes(12, seed: 9)
        server.setFile("/catalog.json", contents: catalog)
        let manifest = try JSONSerialization.data(withJSONObject: [
            ["identifier": "catalog", "url": server.url("/catalog.json"), "size": catalog.count, "essential": true]
        ])
        let fixture = try SampleAppFixture(
            server: server, manifest: Array(manifest), extensionLibrary: "AppleCompatibilityExtension"
        ) { info in
            info["BAAppGroupID"] = Self.group
        }
        defer { fixture.remove() }
        let daemon = try await DaemonProcess.start()
        defer { daemon.kill() }

        let install = try await report(daemon, ["install", fixture.appDirectory, "--no-wait"])
        #expect(install["verdict"] as? String == "ok", "\(install)\n\(daemon.standardError)")
        #expect(Self.scheduled(install) == ["catalog": true], "\(install)")

        // Not running, so the app's extension gets the finished file and moves it into the group.
        let moved = daemon.stateDirectory + "/groups/" + Self.group + "/catalog"
        _ = try await CLIQueries.poll(
            "the extension to move the catalog into the group", daemon, timeout: 30,
            read: { FileManager.default.contents(atPath: moved) }, until: { $0 != nil })
        #expect(FileManager.default.contents(atPath: moved).map(Array.init) == catalog)

        let languageChange = try await report(
            daemon, ["simulate", "language-change", "--app", SampleAppFixture.bundleIdentifier])
        #expect(languageChange["event"] as? String == "languageChange", "\(languageChange)")
        #expect(languageChange["verdict"] as? String == "ok", "\(languageChange)")
        // Asked again, not essential this time (the Apple-style code asks for essential only on
        // install and update): scheduled anew, the finished one having ended.
        #expect(Self.scheduled(languageChange) == ["catalog": false], "\(languageChange)")
        #expect(Self.refusedCodes(languageChange).isEmpty, "\(languageChange)")
    }
}
