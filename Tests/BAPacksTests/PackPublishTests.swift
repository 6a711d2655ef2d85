import BACore
import BAHashing
import Foundation
import Testing

@testable import BAPacks

/// `ba pack publish` and its signature: the download manifest lists each pack's newest version
/// with its index's URL and SHA-256, and an Ed25519 signature that any change to the manifest, or
/// another key, fails.
@Suite("pack publish and signing")
struct PackPublishTests {
    @Test func signaturesVerifyAndAnyChangeFails() throws {
        let pair = try PackSigning.generateKeyPair()
        #expect(try PackSigning.publicKey(of: pair.privateKey) == pair.publicKey)
        let message = Array(#"{"formatVersion":1}"#.utf8)
        let signature = try PackSigning.sign(message, seed: pair.privateKey)
        #expect(signature.count == 64)
        #expect(PackSigning.verify(message, signature: signature, publicKey: pair.publicKey))
        var changed = message
        changed[2] ^= 1
        #expect(!PackSigning.verify(changed, signature: signature, publicKey: pair.publicKey))
        var forged = signature
        forged[10] ^= 0x80
        #expect(!PackSigning.verify(message, signature: forged, publicKey: pair.publicKey))
        let other = try PackSigning.generateKeyPair()
        #expect(!PackSigning.verify(message, signature: signature, publicKey: other.publicKey))
        #expect(other.privateKey != pair.privateKey)
        // RFC 8032's first test vector: the empty message.
        let seed = Array(Data(base64Encoded: "nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A=")!)
        #expect(
            Data(try PackSigning.publicKey(of: seed)).base64EncodedString()
                == "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=")
        #expect(
            Data(try PackSigning.sign([], seed: seed)).base64EncodedString()
                == "5VZDAMNgrHKQhuLMgG6CioSHfx645dl02HPgZSJJAVVfuIIVkKM7rMYeOXAc+bRr0lv18FlbviRlUUFDjnoQCw==")
        #expect(throws: PackError.self) { try PackSigning.key(base64: "not a key", what: "k") }
    }

    @Test func publishListsEachPacksNewestVersionAndSigns() throws {
        let root = try PackBuildTests.Folder()
        let publish = try PackBuildTests.Folder()
        defer {
            root.remove()
            publish.remove()
        }
        try root.write(ContentDefinedChunkerTests.randomBytes(100_000, seed: 31), to: "Levels/a.bin")
        try root.write([1, 2, 3], to: "intro.bin")
        let builder = PackBuilder(parameters: try .init(average: 4096))
        _ = try builder.build(
            try PackBuildTests.manifest(), root: root.path, version: 1, publishDirectory: publish.path)
        try root.write([4, 5, 6], to: "intro.bin")
        let second = try builder.build(
            try PackBuildTests.manifest(), root: root.path, version: 2, publishDirectory: publish.path)
        #expect {
            try PackPublisher.publish(publish.path, baseURL: "ftp://cdn.example.com")
        } throws: { "\($0)".contains("not an http(s) URL") }
        let pair = try PackSigning.generateKeyPair()
        // Signed: bound to its app (refused without one).
        #expect {
            try PackPublisher.publish(
                publish.path, baseURL: "https://cdn.example.com/game/", signingKey: pair.privateKey)
        } throws: { "\($0)".contains("--app") }
        let manifest = try PackPublisher.publish(
            publish.path, baseURL: "https://cdn.example.com/game/", signingKey: pair.privateKey,
            apps: ["com.example.game"])
        #expect(manifest.formatVersion == 3 && manifest.apps == ["com.example.game"])
        #expect(manifest.sequence == 1)
        let expiry = try #require(manifest.expiryDate)
        #expect(abs(expiry.timeIntervalSinceNow - 30 * 86400) < 600)
        let entry = try #require(manifest.assetPacks.first)
        #expect(manifest.assetPacks.count == 1)
        #expect(entry.assetPackID == "levels" && entry.version == 2)
        #expect(entry.indexURL == "https://cdn.example.com/game/packs/levels/2.json")
        #expect(entry.downloadSize == second.index.downloadSize)
        #expect(entry.downloadPolicy == .prefetch([.firstInstallation, .subsequentUpdate]))
        let index = try Data(contentsOf: URL(fileURLWithPath: publish.path + "/packs/levels/2.json"))
        #expect(entry.indexSHA256 == index.withUnsafeBytes { SHA256Hasher.hex(of: $0) })
        // The file on disk is the manifest, and its signature verifies with the public key.
        let written = try Data(contentsOf: URL(fileURLWithPath: publish.path + "/manifest.json"))
        #expect(try PackPublisher.DownloadManifest.decodeUnchecked(Array(written)) == manifest)
        let signatureText = try String(contentsOfFile: publish.path + "/manifest.json.sig", encoding: .utf8)
        let signature = try #require(Data(base64Encoded: signatureText))
        #expect(PackSigning.verify(Array(written), signature: Array(signature), publicKey: pair.publicKey))
        // Unsigned: no stale signature is left beside the new manifest.
        let unsigned = try PackPublisher.publish(publish.path, baseURL: "https://cdn.example.com/game")
        #expect(!FileManager.default.fileExists(atPath: publish.path + "/manifest.json.sig"))
        // Each publish of the folder is one sequence above the last.
        #expect(unsigned.sequence == 2)
        // The policy's JSON is Apple's.
        #expect(
            String(decoding: try JSONCoding.encoder.encode(PackManifest.DownloadPolicy.onDemand), as: UTF8.self)
                == #"{"onDemand":{}}"#)
    }

    /// `--merge`: an app with its own extension is handed the same document at `BAManifestURL`;
    /// the merged keys sit beside the manifest's, the signature covers them, and a key of the
    /// manifest's own is refused.
    @Test func mergedKeysAreSignedAndTheManifestsOwnAreRefused() throws {
        let root = try PackBuildTests.Folder()
        let publish = try PackBuildTests.Folder()
        defer {
            root.remove()
            publish.remove()
        }
        try root.write(ContentDefinedChunkerTests.randomBytes(20_000, seed: 7), to: "Levels/a.bin")
        try root.write([1], to: "intro.bin")
        _ = try PackBuilder(parameters: try .init(average: 4096)).build(
            try PackBuildTests.manifest(), root: root.path, version: 1, publishDirectory: publish.path)
        let pair = try PackSigning.generateKeyPair()
        let extensionKeys: [String: JSONValue] = [
            "applicationGroupIdentifier": .string("group.example"),
            "assets": .array([.object(["identifier": .string("catalog"), "fileSize": .integer(809)])]),
        ]
        let manifest = try PackPublisher.publish(
            publish.path, baseURL: "http://127.0.0.1:8000", signingKey: pair.privateKey, mergingKeys: extensionKeys,
            apps: ["com.example.game"])
        let written = try Data(contentsOf: URL(fileURLWithPath: publish.path + "/manifest.json"))
        // Each reader finds its own keys: the pack service's type, and the extension's.
        #expect(try PackPublisher.DownloadManifest.decodeUnchecked(Array(written)) == manifest)
        guard case .object(let document) = try JSONDecoder().decode(JSONValue.self, from: written) else {
            Issue.record("manifest.json is not an object")
            return
        }
        #expect(document["applicationGroupIdentifier"] == .string("group.example"))
        #expect(document["assets"] == extensionKeys["assets"])
        #expect(document["formatVersion"] == .integer(3))
        let signatureText = try String(contentsOfFile: publish.path + "/manifest.json.sig", encoding: .utf8)
        let signature = try #require(Data(base64Encoded: signatureText))
        #expect(PackSigning.verify(Array(written), signature: Array(signature), publicKey: pair.publicKey))
        #expect {
            try PackPublisher.publish(
                publish.path, baseURL: "http://127.0.0.1:8000", mergingKeys: ["assetPacks": .array([])])
        } throws: { "\($0)".contains("\"assetPacks\", which is the manifest's own") }
        // Refused before anything is written: the signed manifest is still there.
        #expect(try Data(contentsOf: URL(fileURLWithPath: publish.path + "/manifest.json")) == written)
    }
}
