import BAPacks
import BAStore

extension PackService {
    /// Where `app`'s download manifest is read from: the URL the user pointed it at (`ba packs
    /// override`), else its `BAManifestURL` (nil: it has none). Throws when basd cannot read its
    /// overrides: the check then refuses, never reads another URL than the user set (fail closed).
    func manifestSource(of app: StoredApp) throws(ManifestRefusal) -> (url: String, overridden: Bool)? {
        let overrides: [String: String]
        do { overrides = try store.packOverrides() } catch { throw .stateUnreadable("\(error)") }
        if let url = overrides[app.bundleIdentifier] { return (url, true) }
        return app.manifestURL.map { ($0, false) }
    }

    /// The key under which a manifest's sequence is kept (`pack_trust`): the publisher's key,
    /// and for an overridden manifest the override's URL too. A test server's sequence starts
    /// afresh, and the CDN's sequence is untouched by it: when the override is cleared, the CDN
    /// cannot replay anything older than it had served.
    static func trustKey(publicKey: String, override: String?) -> String {
        guard let override else { return publicKey }
        return publicKey + " override " + override
    }
}
