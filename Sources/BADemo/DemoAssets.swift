import BACommands
import BAHashing
import BASampleAssets
import Foundation

/// The files `ba demo` serves: the sample app's manifest (from its template, with the server's
/// base URL), its catalog, and every asset the two list, read from `Examples/SampleApp/assets/`
/// or generated as the entry's `generate` says (so the repository holds no large binaries).
struct DemoAssets {
    /// One asset the app should end up with.
    struct Asset {
        var identifier: String
        /// Where the server serves it, e.g. `/levels/level-2.pak`.
        var path: String
        var bytes: [UInt8]
        var essential: Bool
        /// Listed by the catalog (scheduled by the extension once the catalog arrives), not the manifest.
        var fromCatalog: Bool
        var sha256: String { SHA256Hasher.hex(of: bytes) }
    }

    /// An entry of the manifest (template) or of the catalog.
    private struct Entry: Decodable {
        struct Generate: Decodable {
            var seed: Int
            var size: Int
        }
        var identifier: String
        var url: String
        var essential: Bool?
        var generate: Generate?
    }

    private struct Listing: Decodable { var assets: [Entry] }

    static let baseURLPlaceholder = "{{BASE_URL}}"

    let assets: [Asset]
    /// The manifest with the placeholder replaced: merged into the packs' download manifest
    /// (`ba pack publish --merge`), which is served at `/manifest.json`.
    let manifest: [UInt8]

    /// Reads the sample app's asset set from `appDirectory` (`Examples/SampleApp`) for a server at `baseURL`.
    init(appDirectory: String, baseURL: String) throws {
        let template = try String(contentsOfFile: appDirectory + "/manifest.template.json", encoding: .utf8)
        let manifestText = template.replacingOccurrences(of: Self.baseURLPlaceholder, with: baseURL)
        manifest = Array(manifestText.utf8)
        let manifestEntries = try JSONDecoder().decode(Listing.self, from: Data(manifest)).assets
        let catalogFile = appDirectory + "/assets/catalog.json"
        let catalogEntries = try JSONDecoder().decode(
            Listing.self, from: Data(contentsOf: URL(fileURLWithPath: catalogFile))
        ).assets

        var assets: [Asset] = []
        for (entries, fromCatalog) in [(manifestEntries, false), (catalogEntries, true)] {
            for entry in entries {
                // Manifest URLs are absolute (the extension gets the manifest as a local file);
                // catalog URLs are relative to the catalog, which is served at the root.
                let path =
                    "/"
                    + (entry.url.hasPrefix(baseURL + "/") ? String(entry.url.dropFirst(baseURL.count + 1)) : entry.url)
                let bytes: [UInt8]
                if let generate = entry.generate {
                    bytes = SampleAssets.bytes(seed: generate.seed, size: generate.size)
                } else {
                    bytes = try Array(Data(contentsOf: URL(fileURLWithPath: appDirectory + "/assets" + path)))
                }
                assets.append(
                    Asset(
                        identifier: entry.identifier, path: path, bytes: bytes, essential: entry.essential == true,
                        fromCatalog: fromCatalog))
            }
        }
        self.assets = assets
    }
}
