import BATestSupport
import Foundation
import Testing

@testable import BAPacks

/// `ba pack template`, `build` and `verify` as a publisher runs them: real `ba` processes on real
/// folders, their exit codes and what they print.
@Suite("ba pack")
struct PackCommandTests {
    @Test func templateBuildVerifyAndDamage() async throws {
        let folder = try PackBuildTests.Folder()
        defer { folder.remove() }
        let ba = BuildProducts.executable("ba")
        let manifest = folder.path + "/Manifest.json"
        let template = try await runProcess(ba, ["pack", "template", "-o", manifest])
        #expect(template.status == 0, "\(template.stderr)")
        #expect(try await runProcess(ba, ["pack", "template", "-o", manifest]).status == 73, "never overwritten")
        try folder.write(ContentDefinedChunkerTests.randomBytes(500_000, seed: 21), to: "Levels/a.bin")
        try folder.write(ContentDefinedChunkerTests.randomBytes(70_000, seed: 22), to: "Intro.m4v")
        let publish = folder.path + "/public"
        let build = try await runProcess(ba, ["pack", "build", manifest, "--version", "1", "-o", publish])
        #expect(build.status == 0, "\(build.stderr)")
        #expect(build.stdout.contains("built levels version 1: 2 file(s)"), "\(build.stdout)")
        let verify = try await runProcess(ba, ["pack", "verify", publish])
        #expect(verify.status == 0 && verify.stdout.contains("all verified"), "\(verify.stdout)\(verify.stderr)")
        // A key pair, never overwritten; the private half readable by its owner only.
        let key = folder.path + "/signing.key"
        let keygen = try await runProcess(ba, ["pack", "keygen", "-o", key])
        #expect(keygen.status == 0, "\(keygen.stderr)")
        #expect(try await runProcess(ba, ["pack", "keygen", "-o", key]).status == 73)
        let attributes = try FileManager.default.attributesOfItem(atPath: key)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let publicKey = try PackSigning.key(base64: keygen.stdout, what: "printed key")
        #expect(
            publicKey
                == (try PackSigning.key(base64: String(contentsOfFile: key + ".pub", encoding: .utf8), what: "pub")))
        // Published and signed: the signature verifies with the printed public key.
        let published = try await runProcess(
            ba,
            [
                "pack", "publish", publish, "--base-url", "https://cdn.example.com/game", "--key", key, "--app",
                "com.example.game",
            ])
        #expect(published.status == 0 && published.stdout.contains("levels version 1"), "\(published.stderr)")
        let manifestBytes = try Data(contentsOf: URL(fileURLWithPath: publish + "/manifest.json"))
        let signature = try #require(
            Data(base64Encoded: try String(contentsOfFile: publish + "/manifest.json.sig", encoding: .utf8)))
        #expect(PackSigning.verify(Array(manifestBytes), signature: Array(signature), publicKey: publicKey))
        let badURL = try await runProcess(ba, ["pack", "publish", publish, "--base-url", "cdn.example.com"])
        #expect(badURL.status == 43 && badURL.stderr.contains("not an http(s) URL"), "\(badURL.stderr)")
        // A chunk damaged on the server: found, exit 43.
        let chunks = publish + "/chunks"
        let prefix = try #require(try FileManager.default.contentsOfDirectory(atPath: chunks).sorted().first)
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: chunks + "/" + prefix).first)
        try Data([0x28, 0xb5, 0x2f, 0xfd, 0]).write(to: URL(fileURLWithPath: chunks + "/" + prefix + "/" + name))
        let damaged = try await runProcess(ba, ["pack", "verify", publish])
        #expect(damaged.status == 43, "\(damaged.stderr)")
        #expect(damaged.stderr.contains(name), "\(damaged.stderr)")
        // A bad manifest: what is wrong, exit 43; a missing one: 66.
        try Data(#"{"assetPackID":"x","downloadPolicy":{},"fileSelectors":[{"file":"Intro.m4v"}]}"#.utf8).write(
            to: URL(fileURLWithPath: manifest))
        let bad = try await runProcess(ba, ["pack", "build", manifest, "--version", "2", "-o", publish])
        #expect(
            bad.status == 43 && bad.stderr.contains("exactly one of essential, prefetch or onDemand"), "\(bad.stderr)")
        let missing = try await runProcess(
            ba, ["pack", "build", folder.path + "/none.json", "--version", "1", "-o", publish])
        #expect(missing.status == 66, "\(missing.stderr)")
    }
}
