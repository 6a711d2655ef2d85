import BACore
import BAHashing
import BAPackManifest
import Foundation

/// `ba pack publish`: the download manifest devices read at the app's `BAManifestURL`
/// (`PUBLISH_DIR/manifest.json`), in Apple's self-hosted shape (format 3): for the newest version
/// of each pack in the folder, its id, version, download size, policy, `userInfo`, and the URL and
/// SHA-256 of its index. With a key,
/// `manifest.json.sig` holds its Ed25519 signature (base64): the chain a device checks is
/// signature → manifest → index SHA-256 → chunk SHA-256s → file SHA-256s.
package enum PackPublisher {
    /// The download manifest's own keys, which ``publish(_:baseURL:signingKey:mergingKeys:)`` refuses to merge.
    package static let ownKeys: Set<String> = ["formatVersion", "sequence", "expires", "apps", "assetPacks"]

    /// Writes `manifest.json` (and `manifest.json.sig` with `signingKey`) into `publishDirectory`:
    /// format 3 (or 2), with a sequence one above the folder's last manifest's, an expiry and the apps
    /// it is for (what a device needs to refuse a replayed, frozen or misdirected manifest).
    ///
    /// - Parameters:
    ///   - mergingKeys: Other top-level keys to write into `manifest.json` beside the
    ///     manifest's own (`ba pack publish --merge`). An app that has packs *and* its own extension
    ///     is handed one document at `BAManifestURL`: the pack service reads `formatVersion` and
    ///     `assetPacks`, the extension its own keys (the sample app's `assets`), each ignoring the
    ///     other's. The signature covers the merged bytes. A key of the manifest's own is refused.
    ///   - apps: The bundle identifiers it is for (required with a key: a signed manifest is bound
    ///     to its apps).
    ///   - expires: When devices stop accepting it (`--expires`, 30 days by default).
    ///   - downgrades: Packs to publish at an older version on purpose (ID → version): their
    ///     entries say `allowsDowngrade`, without which a device refuses to go back.
    ///   - format: 3 (Apple's self-hosted shape: `id`, `url`, `host`), or 2 (our own keys, which a
    ///     basd from before format 3 reads; `--manifest-format 2`).
    package static func publish(
        _ publishDirectory: String, baseURL: String, signingKey: [UInt8]? = nil,
        mergingKeys: [String: JSONValue] = [:], apps: [String] = [],
        expires: Date = Date().addingTimeInterval(30 * 86400),
        downgrades: [String: Int] = [:], format: Int = DownloadManifest.currentFormat
    ) throws(PackError) -> DownloadManifest {
        guard format == 2 || format == DownloadManifest.currentFormat else {
            throw PackError("the download manifest is written in format 2 or 3 (Apple's shape), not \(format)")
        }
        if signingKey != nil && apps.isEmpty {
            throw PackError(
                "a signed manifest names the app(s) it is for, so that it cannot be served to another: add --app BUNDLE_ID"
            )
        }
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
        for id in try PackFileSystem.names(in: packs, missingIsEmpty: true) {
            let versions = try PackFileSystem.names(in: packs + "/" + id)
                .compactMap { $0.hasSuffix(".json") ? Int($0.dropLast(5)) : nil }
            guard var newest = versions.max() else { continue }
            if let pinned = downgrades[id] {
                guard versions.contains(pinned) else {
                    throw PackError("--downgrade \(id)=\(pinned): \(packs)/\(id) has no version \(pinned)")
                }
                newest = pinned
            }
            let relative = PackIndex.indexPath(id: id, version: newest)
            guard let data = FileManager.default.contents(atPath: publishDirectory + "/" + relative) else {
                throw PackError("cannot read \(publishDirectory)/\(relative)")
            }
            // Format 1 as it is (a device checks it); a format 2 root with its parts, as a device reads it.
            let index: PackIndex
            if let whole = try? JSONCoding.decoder.decode(PackIndex.self, from: data) {
                index = whole
            } else {
                index = try PackIndex.read(publishDirectory + "/" + relative)
            }
            guard index.id == id, index.version == newest else {
                throw PackError(
                    "\(publishDirectory)/\(relative) describes \(index.id) version \(index.version), not its path's")
            }
            entries.append(
                .init(
                    assetPackID: id, version: newest, downloadSize: index.downloadSize,
                    downloadPolicy: index.downloadPolicy, userInfo: index.userInfo, indexURL: base + "/" + relative,
                    indexSHA256: data.withUnsafeBytes { SHA256Hasher.hex(of: $0) },
                    allowsDowngrade: downgrades[id] != nil ? true : nil, language: index.language))
        }
        guard !entries.isEmpty else {
            throw PackError("\(packs) holds no pack indexes: run `ba pack build` first")
        }
        if let unknown = downgrades.keys.first(where: { id in !entries.contains { $0.assetPackID == id } }) {
            throw PackError("--downgrade names \(unknown), which \(packs) does not hold")
        }
        let manifest = DownloadManifest(
            formatVersion: format, sequence: try lastSequence(publishDirectory) + 1,
            expires: DownloadManifest.formatDate(expires),
            apps: apps.isEmpty ? nil : apps, assetPacks: entries)
        let bytes: [UInt8]
        do {
            let own = try manifest.wireDocument()
            bytes = Array(try JSONCoding.encoder.encode(JSONValue.object(own.merging(mergingKeys) { own, _ in own })))
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
            PackFileSystem.removeFile(signaturePath)
        }
        try PackBuilder.writeAtomically(bytes, to: publishDirectory + "/manifest.json")
        return manifest
    }

    /// The sequence of the folder's current `manifest.json` (0 when there is none, or it is
    /// format 1): the next one publishes one above it. One that cannot be read is an error, never
    /// 0: starting again at 1 would be refused by every device as a rollback.
    static func lastSequence(_ publishDirectory: String) throws(PackError) -> Int {
        do {
            return try currentManifest(publishDirectory)?.sequence ?? 0
        } catch {
            throw PackError(
                "cannot read the sequence of the folder's last manifest: restore it (devices refuse a sequence that does not grow): \(error)"
            )
        }
    }

    /// The folder's current `manifest.json`, nil when there is none; one that cannot be read or
    /// decoded is an error (saying why), never taken for none.
    static func currentManifest(_ publishDirectory: String) throws(PackError) -> DownloadManifest? {
        let path = publishDirectory + "/manifest.json"
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            return try DownloadManifest.decodeUnchecked(RegularFile.read(path, limit: PackLimits.maximumManifestBytes))
        } catch {
            throw PackError("cannot read \(path): \(error)")
        }
    }
}
