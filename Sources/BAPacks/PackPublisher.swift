import BACore
import BADownloadEngine
import Foundation

/// `ba pack publish`: the download manifest devices read at the app's `BAManifestURL`
/// (`PUBLISH_DIR/manifest.json`): for the newest version of each pack in the folder, its id,
/// version, download size, policy, `userInfo`, and the URL and SHA-256 of its index. With a key,
/// `manifest.json.sig` holds its Ed25519 signature (base64): the chain a device checks is
/// signature → manifest → index SHA-256 → chunk SHA-256s → file SHA-256s.
package enum PackPublisher {
    /// The download manifest.
    package struct DownloadManifest: Sendable, Hashable, Codable {
        /// One pack's entry.
        package struct Entry: Sendable, Hashable, Codable {
            package var assetPackID: String
            package var version: Int
            package var downloadSize: Int64
            package var downloadPolicy: PackManifest.DownloadPolicy
            package var userInfo: JSONValue?
            package var indexURL: String
            package var indexSHA256: String
        }

        /// This build writes and reads 1.
        package var formatVersion: Int
        package var assetPacks: [Entry]
    }

    /// The download manifest's own keys, which ``publish(_:baseURL:signingKey:mergingKeys:)`` refuses to merge.
    package static let ownKeys: Set<String> = ["formatVersion", "assetPacks"]

    /// Writes `manifest.json` (and `manifest.json.sig` with `signingKey`) into `publishDirectory`.
    ///
    /// - Parameter mergingKeys: Other top-level keys to write into `manifest.json` beside the
    ///   manifest's own (`ba pack publish --merge`). An app that has packs *and* its own extension
    ///   is handed one document at `BAManifestURL`: the pack service reads `formatVersion` and
    ///   `assetPacks`, the extension its own keys (the sample app's `assets`), each ignoring the
    ///   other's. The signature covers the merged bytes. A key of the manifest's own is refused.
    package static func publish(
        _ publishDirectory: String, baseURL: String, signingKey: [UInt8]? = nil,
        mergingKeys: [String: JSONValue] = [:]
    ) throws(PackError) -> DownloadManifest {
        if let clash = mergingKeys.keys.filter(ownKeys.contains).sorted().first {
            throw PackError(
                "the keys to merge into the download manifest include \"\(clash)\", which is the manifest's own: "
                    + "rename or remove it in the merged file")
        }
        guard let url = URL(string: baseURL), let scheme = url.scheme?.lowercased(),
            scheme == "https" || scheme == "http",
            url.host?.isEmpty == false
        else {
            throw PackError("--base-url \(baseURL) is not an http(s) URL, e.g. https://cdn.example.com/game")
        }
        let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        let packs = publishDirectory + "/packs"
        var entries: [DownloadManifest.Entry] = []
        for id in ((try? FileManager.default.contentsOfDirectory(atPath: packs)) ?? []).sorted() {
            let versions = ((try? FileManager.default.contentsOfDirectory(atPath: packs + "/" + id)) ?? [])
                .compactMap { $0.hasSuffix(".json") ? Int($0.dropLast(5)) : nil }
            guard let newest = versions.max() else { continue }
            let relative = PackIndex.indexPath(id: id, version: newest)
            guard let data = FileManager.default.contents(atPath: publishDirectory + "/" + relative) else {
                throw PackError("cannot read \(publishDirectory)/\(relative)")
            }
            let index: PackIndex
            do {
                index = try JSONCoding.decoder.decode(PackIndex.self, from: data)
            } catch {
                throw PackError("\(publishDirectory)/\(relative) is not a pack index: \(JSONCoding.describe(error))")
            }
            guard index.id == id, index.version == newest else {
                throw PackError(
                    "\(publishDirectory)/\(relative) describes \(index.id) version \(index.version), not its path's")
            }
            entries.append(
                .init(
                    assetPackID: id, version: newest, downloadSize: index.downloadSize,
                    downloadPolicy: index.downloadPolicy, userInfo: index.userInfo, indexURL: base + "/" + relative,
                    indexSHA256: data.withUnsafeBytes { SHA256Hasher.hex(of: $0) }))
        }
        guard !entries.isEmpty else {
            throw PackError("\(packs) holds no pack indexes: run `ba pack build` first")
        }
        let manifest = DownloadManifest(formatVersion: 1, assetPacks: entries)
        var bytes: [UInt8]
        do {
            bytes = Array(try JSONCoding.encoder.encode(manifest))
            if !mergingKeys.isEmpty,
                case .object(let own) = try JSONCoding.decoder.decode(JSONValue.self, from: Data(bytes))
            {
                bytes = Array(
                    try JSONCoding.encoder.encode(JSONValue.object(own.merging(mergingKeys) { own, _ in own })))
            }
        } catch {
            throw PackError("cannot encode the download manifest: \(error)")
        }
        // The signature first: a device never sees a new manifest beside an old signature it
        // would refuse (it sees the old manifest with a signature that is wrong for a moment).
        let signaturePath = publishDirectory + "/manifest.json.sig"
        if let signingKey {
            let signature = try PackSigning.sign(bytes, seed: signingKey)
            try PackBuilder.writeAtomically(Array(Data(signature).base64EncodedString().utf8), to: signaturePath)
        } else {
            unlink(signaturePath)
        }
        try PackBuilder.writeAtomically(bytes, to: publishDirectory + "/manifest.json")
        return manifest
    }
}
