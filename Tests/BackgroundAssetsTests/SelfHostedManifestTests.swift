import BACore
import BAExtensionABI
import CBAExtension
import Foundation
import Testing

@testable import BackgroundAssets

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Apple's OS 26 self-hosted `AssetPackManifest` on the app and extension side (issue 35): a
/// manifest written by hand in Apple's shape read from a file, bad ones refused with typed errors,
/// `allDownloads(for:)` on every request, and `AssetPack.download(for:)`'s download keeping what it
/// is through every copy and every channel to basd.
@Suite("self-hosted AssetPackManifest")
struct SelfHostedManifestTests {
    static let group = "group.example.game"
    static let sha = String(repeating: "0123456789abcdef", count: 4)

    /// An entry in Apple's shape (`id`, `url`, `host`) with `indexSHA256`; `extra` adds keys.
    static func entry(_ id: String, version: Int = 1, size: Int = 10, policy: String, extra: String = "") -> String {
        """
        {"id":"\(id)","url":"http://127.0.0.1/game/packs/\(id)/\(version).json","version":\(version),\
        "downloadSize":\(size),"downloadPolicy":\(policy),"host":{"thirdParty":{}},\
        "indexSHA256":"\(sha)"\(extra)}
        """
    }
    static let essentialFirst = #"{"essential":{"installationEventTypes":["firstInstallation"]}}"#
    static let prefetchUpdate = #"{"prefetch":{"installationEventTypes":["subsequentUpdate"]}}"#
    static let prefetchBoth =
        #"{"prefetch":{"installationEventTypes":["firstInstallation","subsequentUpdate"]}}"#
    static let onDemand = #"{"onDemand":{}}"#

    static func document(_ entries: [String]) -> Data {
        Data(#"{"assetPacks":[\#(entries.joined(separator: ","))]}"#.utf8)
    }

    /// The manifest of the tests below: one pack of each kind, and two localized ones.
    static let packs = document([
        entry("base", version: 3, size: 4096, policy: essentialFirst, extra: #","userInfo":{"tier":1,"a":"b"}"#),
        entry("patch", policy: prefetchUpdate), entry("extras", policy: onDemand),
        entry("voice-fr", policy: prefetchBoth, extra: #","language":"fr""#),
        entry("voice-en", policy: prefetchBoth, extra: #","language":"en""#),
        entry("voice-bad", policy: prefetchBoth, extra: #","language":"not a tag""#),
    ])

    /// A folder of its own under the temporary directory, removed by `body`'s end.
    static func withFolder<T>(_ body: (URL) throws -> T) throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ba-selfhosted-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try body(folder)
    }

    @Test("a manifest written by hand in Apple's shape, read from its file")
    func handWrittenFile() throws {
        let apple = Data(
            #"""
            {"assetPacks":[{"id":"x","url":"http://127.0.0.1/packs/x/1.json","version":1,"downloadSize":10,
              "downloadPolicy":{"essential":{"installationEventTypes":["firstInstallation"]}},
              "host":{"thirdParty":{}},
              "indexSHA256":"\#(Self.sha)"}]}
            """#.utf8)
        let manifest = try Self.withFolder { folder in
            let file = folder.appendingPathComponent("manifest.json")
            try apple.write(to: file)
            return try AssetPackManifest(contentsOf: file, appGroupID: Self.group)
        }
        let pack = try #require(manifest.assetPack(withID: "x"))
        #expect(pack.version == 1 && pack.downloadSize == 10 && pack.userInfo == nil && pack.language == nil)
        #expect(
            pack.selfHosted
                == .init(
                    indexURL: "http://127.0.0.1/packs/x/1.json", indexSHA256: Self.sha,
                    downloadPolicy: .essential([.firstInstallation]), appGroupID: Self.group))
        let downloads = manifest.allDownloads(for: .install)
        let download = try #require(downloads.first as? BAURLDownload)
        #expect(downloads.count == 1 && download.isEssential)
        #expect(download.record.isAssetPack)
        #expect(DownloadRules.check(download.record, contentRequest: 1) == nil)
    }

    @Test("each entry is an AssetPack: id, version, size, userInfo as JSON, language; a bad language is left out")
    func assetPacks() throws {
        let manifest = try AssetPackManifest(from: Self.packs, appGroupID: Self.group)
        #expect(
            Set(manifest.assetPacks.map(\.id)) == ["base", "patch", "extras", "voice-fr", "voice-en"])
        let base = try #require(manifest.assetPack(withID: "base"))
        #expect(base.version == 3 && base.downloadSize == 4096)
        #expect(base.userInfo.map { String(decoding: $0, as: UTF8.self) } == #"{"a":"b","tier":1}"#)
        #expect(manifest.assetPack(withID: "voice-fr")?.language?.packTag == "fr")
        #expect(Set(manifest.availableLanguages.compactMap(\.packTag)) == ["en", "fr"])
    }

    @Test("allDownloads(for:): the packs and essentials of each request, localized ones in the resolved language")
    func allDownloads() throws {
        let read = try AssetPackManifest(from: Self.packs, appGroupID: Self.group)
        let manifest = AssetPackManifest(
            assetPacks: read.assetPacks, resolvedLanguage: Locale.Language(identifier: "fr"))
        func answer(_ request: BAContentRequest?) -> [String: Bool] {
            Dictionary(
                uniqueKeysWithValues: manifest.allDownloads(for: request).map { ($0.identifier, $0.isEssential) })
        }
        #expect(answer(nil) == ["base": false, "patch": false, "extras": false, "voice-fr": false])
        #expect(answer(.install) == ["base": true, "voice-fr": false])
        #expect(answer(.update) == ["patch": false, "voice-fr": false])
        #expect(answer(.periodic) == ["base": false, "patch": false, "voice-fr": false])
        #expect(answer(.languageChange) == ["base": false, "patch": false, "voice-fr": false])
        let english = AssetPackManifest(
            assetPacks: read.assetPacks, resolvedLanguage: Locale.Language(identifier: "en"))
        #expect(Set(english.allDownloads(for: .install).map(\.identifier)) == ["base", "voice-en"])
        // Every download is one the rules accept for its request.
        for request in BAContentRequest.allCases {
            for download in manifest.allDownloads(for: request) {
                let record = try #require((download as? BAURLDownload)?.record)
                #expect(DownloadRules.check(record, contentRequest: Int32(request.rawValue)) == nil)
            }
        }
    }

    /// One bad manifest: what it breaks and the rule it names.
    static let badManifests: [(String, String)] = [
        ("not json", "json"),
        (
            #"{"assetPacks":[{"id":"x","url":"http://127.0.0.1/packs/x/1.json","version":1,"downloadSize":1,"downloadPolicy":{"onDemand":{}},"host":{"thirdParty":{}}}]}"#,
            "json"
        ),
        (
            String(
                decoding: document([
                    entry("x", policy: onDemand).replacingOccurrences(of: "packs/x/1.json", with: "x/index.json")
                ]), as: UTF8.self), "url"
        ),
        (
            String(decoding: document([entry("x", policy: onDemand), entry("x", policy: onDemand)]), as: UTF8.self),
            "id"
        ),
        (String(decoding: document([entry(".x", policy: onDemand)]), as: UTF8.self), "id"),
        (String(decoding: document([entry("x", size: -1, policy: onDemand)]), as: UTF8.self), "downloadSize"),
        (String(decoding: document([entry("x", version: 0, policy: onDemand)]), as: UTF8.self), "version"),
        (#"{"formatVersion":9,"assetPacks":[]}"#, "format"),
        (
            String(
                decoding: document([
                    entry("x", policy: onDemand).replacingOccurrences(
                        of: #""host":{"thirdParty":{}}"#, with: #""host":"apple""#)
                ]), as: UTF8.self), "host"
        ),
        (
            String(
                decoding: document([entry("x", policy: onDemand).replacingOccurrences(of: Self.sha, with: "ABC")]),
                as: UTF8.self), "indexSHA256"
        ),
    ]

    @Test("a bad manifest throws CocoaError(.coderReadCorrupt) naming the rule it breaks", arguments: 0..<10)
    func badManifest(_ index: Int) throws {
        let (json, check) = Self.badManifests[index]
        do {
            _ = try AssetPackManifest(from: Data(json.utf8), appGroupID: Self.group)
            Issue.record("accepted: \(json)")
        } catch let error as CocoaError {
            #expect(error.code == .coderReadCorrupt)
            #expect(error.userInfo[BAManifestCheckErrorKey] as? String == check, "\(error.localizedDescription)")
            #expect(!error.localizedDescription.isEmpty)
        }
        #expect(Self.badManifests.count == 10)
    }

    @Test("an empty or unusable appGroupID is BAError.downloadInvalid")
    func appGroup() throws {
        for group in ["", ".hidden", "a/b"] {
            #expect(throws: BAError.self) { try AssetPackManifest(from: Self.packs, appGroupID: group) }
            do {
                _ = try AssetPackManifest(from: Self.packs, appGroupID: group)
            } catch let error as BAError {
                #expect(error.code == .downloadInvalid)
            }
        }
    }

    @Test("a file that is missing, too large, a folder, a FIFO or not a file URL: CocoaError's file codes")
    func files() throws {
        func code(_ url: URL) -> CocoaError.Code? {
            do {
                _ = try AssetPackManifest(contentsOf: url, appGroupID: Self.group)
                return nil
            } catch {
                return (error as? CocoaError)?.code
            }
        }
        try Self.withFolder { folder in
            #expect(code(folder.appendingPathComponent("missing.json")) == .fileReadNoSuchFile)
            #expect(code(folder) == .fileReadUnknown)
            // A FIFO with no writer answers at once (never a hang), as a file that is not one.
            let fifo = folder.appendingPathComponent("fifo.json")
            #expect(mkfifo(fifo.path, 0o600) == 0)
            #expect(code(fifo) == .fileReadUnknown)
            #expect(code(URL(string: "http://127.0.0.1/manifest.json")!) == .fileReadUnsupportedScheme)
            // One byte over the bound: refused from its size (a sparse file: nothing is read).
            let large = folder.appendingPathComponent("large.json")
            #expect(FileManager.default.createFile(atPath: large.path, contents: nil))
            let handle = try FileHandle(forWritingTo: large)
            try handle.truncate(atOffset: UInt64(16 << 20) + 1)
            try handle.close()
            #expect(code(large) == .fileReadTooLarge)
        }
    }

    @Test("download(for:): the pack's ID, index GET, size, group, index SHA-256 and the asset-pack flag")
    func downloadFields() throws {
        let manifest = try AssetPackManifest(from: Self.packs, appGroupID: Self.group)
        let base = try #require(manifest.assetPack(withID: "base"))
        let download = try #require(base.download(for: .install) as? BAURLDownload)
        #expect(download.identifier == "base" && download.fileSize == 4096 && download.isEssential)
        #expect(download.request.url?.absoluteString == "http://127.0.0.1/game/packs/base/3.json")
        #expect(download.request.httpMethod == "GET")
        #expect(download.applicationGroupIdentifier == Self.group && download.priority == .default)
        #expect(download.baExpectedSHA256 == Self.sha && download.isAssetPack)
        #expect(try #require(base.download(for: .periodic) as? BAURLDownload).isEssential == false)
        #expect(try #require(base.download(for: nil) as? BAURLDownload).isEssential == false)
        #expect(base.download(for: .install).uniqueIdentifier != download.uniqueIdentifier)
    }

    @Test(
        "the download stays an asset pack through copy, removingEssential, baVerifyingSHA256, NSKeyedArchiver and its record"
    )
    func flagSurvives() throws {
        let manifest = try AssetPackManifest(from: Self.packs, appGroupID: Self.group)
        let original = try #require(
            manifest.assetPack(withID: "base")?.download(for: .install) as? BAURLDownload)
        let expected = original.record
        #expect(expected.isAssetPack && expected.sha256 == Self.sha && expected.fileSize == 4096)
        #expect(expected.identifier == "base" && expected.applicationGroupIdentifier == Self.group)

        let copy = try #require(original.copy() as? BAURLDownload)
        #expect(copy.record == expected)
        var notEssential = expected
        notEssential.isEssential = false
        #expect(original.removingEssential().record == notEssential)
        #expect(original.baVerifyingSHA256(Self.sha.uppercased()).record == expected)

        let archived = try NSKeyedArchiver.archivedData(withRootObject: original, requiringSecureCoding: true)
        let unarchived = try #require(
            try NSKeyedUnarchiver.unarchivedObject(ofClass: BAURLDownload.self, from: archived))
        #expect(unarchived.record == expected)
        // A download archived before the flag existed (no key) is no asset pack.
        let plain = BAURLDownload(
            identifier: "p", request: URLRequest(url: URL(string: "https://127.0.0.1/p")!), fileSize: 1,
            applicationGroupIdentifier: Self.group)
        let plainArchive = try NSKeyedArchiver.archivedData(withRootObject: plain, requiringSecureCoding: true)
        #expect(
            try NSKeyedUnarchiver.unarchivedObject(ofClass: BAURLDownload.self, from: plainArchive)?.isAssetPack
                == false)

        let rebuilt = try #require(BAURLDownload(record: expected))
        #expect(rebuilt.isAssetPack && rebuilt.record == expected)
    }

    @Test("the record crosses the runner's binary channel and the C ABI (BA_DOWNLOAD_FLAG_ASSET_PACK) as it is")
    func channels() throws {
        let manifest = try AssetPackManifest(from: Self.packs, appGroupID: Self.group)
        var record = try #require(
            (manifest.assetPack(withID: "voice-fr")?.download(for: .update) as? BAURLDownload)?.record)
        record.uniqueIdentifier = ""  // an extension's download has none until basd assigns one
        var writer = ByteWriter()
        record.encode(into: &writer)
        var reader = ByteReader(writer.bytes)
        #expect(try DownloadDescription.decode(from: &reader) == record)

        let arena = CArena()
        let c = arena.download(record)
        #expect(c.pointee.flags & UInt32(BA_DOWNLOAD_FLAG_ASSET_PACK) != 0)
        #expect(c.pointee.flags & UInt32(BA_DOWNLOAD_FLAG_ESSENTIAL) == 0)
        var fromC = ByteWriter()
        #expect(fromC.download(from: c) == nil)
        var cReader = ByteReader(fromC.bytes)
        #expect(try DownloadDescription.decode(from: &cReader) == record)
        guard case .success(let read) = readDownload(c) else {
            Issue.record("readDownload failed")
            return
        }
        #expect(read == record)
        // Without the flag, the same struct is a plain download.
        c.pointee.flags &= ~UInt32(BA_DOWNLOAD_FLAG_ASSET_PACK)
        guard case .success(let plain) = readDownload(c) else { return }
        #expect(!plain.isAssetPack)
    }

    @Test("a managed pack's download(for:) has no URL and is refused when scheduled, saying what to use instead")
    func managedPack() throws {
        let managed = AssetPack(id: "levels", version: 2, downloadSize: 10)
        let download = try #require(managed.download(for: nil) as? BAURLDownload)
        #expect(download.record.url.isEmpty && download.record.isAssetPack)
        #expect(throws: BAError.self) { try download.validate() }
        do {
            try download.validate()
        } catch {
            #expect(error.code == .downloadInvalid)
            #expect(error.reason.contains("AssetPackManager.ensureLocalAvailability(of:)"))
        }
        // A managed pack's Codable shape is unchanged (no selfHosted key); a self-hosted pack keeps its source.
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(managed)) as? [String: Any]
        #expect(json?["selfHosted"] == nil)
        let selfHosted = try #require(
            try AssetPackManifest(from: Self.packs, appGroupID: Self.group).assetPack(withID: "patch"))
        let decoded = try JSONDecoder().decode(AssetPack.self, from: JSONEncoder().encode(selfHosted))
        #expect(decoded == selfHosted && decoded.selfHosted?.appGroupID == Self.group)
    }
}
