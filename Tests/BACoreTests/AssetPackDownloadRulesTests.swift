import BACore
import Foundation
import Testing

/// An asset pack's download (issue 35, a self-hosted `AssetPack.download(for:)`) as the one
/// download description carries it: its flag on both channels, and the rules only it has.
@Suite("asset pack downloads: the description and its rules")
struct AssetPackDownloadRulesTests {
    static let sha = String(repeating: "c", count: 64)
    static let pack = DownloadDescription(
        identifier: "levels", uniqueIdentifier: "u-9", url: "http://127.0.0.1:8080/game/packs/levels/3.json",
        applicationGroupIdentifier: "group.example.game", isEssential: true, fileSize: 4096, sha256: sha,
        isAssetPack: true)

    /// One row: what is changed in ``pack``, and the violation's code and a phrase of its reason
    /// (nil: accepted).
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var change: @Sendable (inout DownloadDescription) -> Void
        var code: Int?
        var says: String?
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "well formed", change: { _ in }, code: nil, says: nil),
        Row(
            name: "not a pack, no sha256",
            change: {
                $0.isAssetPack = false
                $0.sha256 = nil
            }, code: nil, says: nil),
        Row(
            name: "no indexSHA256", change: { $0.sha256 = nil }, code: 0,
            says: "asset pack download 'levels' has no indexSHA256"),
        Row(
            name: "a short indexSHA256", change: { $0.sha256 = "abc" }, code: 0,
            says: "asset pack download 'levels' has no indexSHA256"),
        Row(
            name: "an indexSHA256 that is not hex", change: { $0.sha256 = String(repeating: "g", count: 64) },
            code: 0, says: "has no indexSHA256"),
        Row(
            name: "an ID that would be a hidden folder", change: { $0.identifier = ".levels" }, code: 0,
            says: "asset pack ID '.levels' starts with '.'"),
        Row(name: "an ID with '..'", change: { $0.identifier = "a..b" }, code: 0, says: "contains '..'"),
        Row(
            name: "no URL (a managed pack)", change: { $0.url = "" }, code: 0,
            says:
                "download(for:) needs a pack from a self-hosted manifest (AssetPackManifest(contentsOf:appGroupID:)); a managed pack (from AssetPackManager) is made local with AssetPackManager.ensureLocalAvailability(of:)"
        ),
        Row(
            name: "plain http to another host", change: { $0.url = "http://192.0.2.1/game/packs/levels/3.json" },
            code: 0, says: "uses plain http"),
        Row(
            name: "a file URL", change: { $0.url = "file:///etc/passwd" }, code: 0,
            says: "is not an absolute http(s) URL"),
        Row(
            name: "essential without a size", change: { $0.fileSize = 0 }, code: 0,
            says: "needs a fileSize greater than 0"),
    ]

    @Test("DownloadRules.check on asset pack downloads", arguments: rows)
    func rules(_ row: Row) {
        var download = Self.pack
        row.change(&download)
        let violation = DownloadRules.check(download, contentRequest: 1)
        #expect(violation?.code == row.code, "\(violation?.reason ?? "accepted")")
        if let says = row.says { #expect(violation?.reason.contains(says) == true, "\(violation?.reason ?? "")") }
    }

    @Test("an essential pack from a periodic request is refused as any essential download is (109)")
    func essentialOnlyOnInstallAndUpdate() {
        #expect(DownloadRules.check(Self.pack, contentRequest: 3)?.code == 109)
        #expect(DownloadRules.check(Self.pack, contentRequest: 2) == nil)
    }

    @Test("JSON: \"assetPack\": true only when it is one; an older sender's description decodes as no pack")
    func json() throws {
        let encoded = try JSONEncoder().encode(Self.pack)
        let object = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any])
        #expect(object["assetPack"] as? Bool == true)
        var decoded = try JSONDecoder().decode(DownloadDescription.self, from: encoded)
        decoded.uniqueIdentifier = Self.pack.uniqueIdentifier
        #expect(decoded == Self.pack)
        var plain = Self.pack
        plain.isAssetPack = false
        let plainObject = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(plain)) as? [String: Any])
        #expect(plainObject["assetPack"] == nil)
        let old = #"{"identifier":"a","url":"https://127.0.0.1/a","headers":[],"priority":50,"isEssential":false}"#
        #expect(try JSONDecoder().decode(DownloadDescription.self, from: Data(old.utf8)).isAssetPack == false)
    }

    @Test("the runner's binary channel carries the flag, and equality sees it")
    func binaryChannel() throws {
        for isAssetPack in [true, false] {
            var download = Self.pack
            download.isAssetPack = isAssetPack
            download.state = .downloading
            var writer = ByteWriter()
            download.encode(into: &writer)
            var reader = ByteReader(writer.bytes)
            let decoded = try DownloadDescription.decode(from: &reader)
            #expect(decoded == download)
            #expect(decoded.isAssetPack == isAssetPack)
        }
        var other = Self.pack
        other.isAssetPack = false
        #expect(other != Self.pack)
        #expect(Set([other, Self.pack]).count == 2)
    }
}
