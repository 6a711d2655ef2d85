import BACore
import Foundation

/// Format 3 of the download manifest: Apple's self-hosted shape, as `ba-package download-manifest
/// create` writes it, `{"assetPacks": [{"id", "url", "version", "downloadSize", "downloadPolicy",
/// "host": {"thirdParty": {}}, "userInfo"}]}`, with our additions beside Apple's keys (`indexSHA256`
/// and `allowsDowngrade` in an entry; `formatVersion`, `sequence`, `expires` and `apps` at the top).
///
/// It is read into the one ``DownloadManifest`` model: an entry's `id` is the model's
/// `assetPackID`, its `url` the model's `indexURL` (the URL a device fetches the pack from, which
/// here is the pack's index), and `host` is checked to be an object and ignored. A manifest without
/// `formatVersion` is format 3 (Apple's writer writes none); `ba pack publish` writes `3`, so that
/// a basd older than this format says "update basd" rather than "not one `ba pack` writes".
extension DownloadManifest {
    /// Apple's name of each entry key whose meaning the model has under another name.
    static let appleNames: [(apple: String, ours: String)] = [("id", "assetPackID"), ("url", "indexURL")]

    /// What format 3 writes as an entry's `host`: Apple's value for a pack on the publisher's own
    /// server. Computed, not a stored global: as a `static let`, LeakSanitizer reported the box of
    /// the indirect enum as leaked at exit (scripts/fuzz.sh stopped on it at once; the global's
    /// pointer likely carries the enum's tag bits, which hides it from the leak scan).
    static var thirdPartyHost: JSONValue { .object(["thirdParty": .object([:])]) }

    /// The manifest in `bytes`, in any format, decoded into the model within
    /// ``PackLimits/maximumManifestBytes`` but not checked (``decode(_:)`` checks; the publisher
    /// reads its own last manifest with this). An entry that names its pack in both shapes (`id`
    /// and `assetPackID`, or `url` and `indexURL`), or in the other format's, is refused: which one
    /// would the device believe?
    ///
    /// - Throws: ``PackError`` (``PackError/Code/invalidMetadata``).
    package static func decodeUnchecked(_ bytes: [UInt8]) throws(PackError) -> Self {
        let document = try JSONCoding.decodeBounded(
            JSONValue.self, from: bytes, limit: PackLimits.maximumManifestBytes, what: "the download manifest",
            sizeCheck: "manifestSize")
        guard case .object(var top) = document else {
            throw .invalid("the download manifest is not a JSON object", check: "json")
        }
        let format: Int
        switch top["formatVersion"] {
        case nil: format = 3
        case .integer(let number): format = Int(clamping: number)
        case let other?:
            throw .invalid(
                "the download manifest's formatVersion is \(other.kindDescription), not an integer", check: "format")
        }
        guard (1...3).contains(format) else {
            throw .invalid(
                "the download manifest has format version \(format); this basd reads 1 to 3 (update basd)",
                check: "format")
        }
        if case .array(let entries)? = top["assetPacks"] {
            guard entries.count <= PackLimits.maximumPacks else {
                throw .invalid(
                    "the download manifest lists \(entries.count) packs; at most \(PackLimits.maximumPacks)",
                    check: "packs")
            }
            var read: [JSONValue] = []
            read.reserveCapacity(entries.count)
            for (position, entry) in entries.enumerated() {
                read.append(try modelEntry(entry, at: position, format: format))
            }
            top["assetPacks"] = .array(read)
        }
        top["formatVersion"] = .integer(Int64(format))
        do {
            let model = try JSONCoding.encoder.encode(JSONValue.object(top))
            return try JSONCoding.decoder.decode(Self.self, from: model)
        } catch {
            throw .invalid(
                "the download manifest is not one `ba pack` writes: \(JSONCoding.describe(error))", check: "json")
        }
    }

    /// One entry of a manifest of `format` with the model's keys: Apple's renamed (format 3), the
    /// other shape's refused, `host` dropped once it is seen to be an object.
    private static func modelEntry(_ entry: JSONValue, at position: Int, format: Int) throws(PackError) -> JSONValue {
        guard case .object(var fields) = entry else { return entry }  // the model's decoder names it
        let apple = format == 3
        for names in appleNames {
            let (given, other) = apple ? (names.apple, names.ours) : (names.ours, names.apple)
            guard fields[other] == nil else {
                throw .invalid(
                    fields[given] == nil
                        ? "the download manifest's pack \(position) has \"\(other)\", a key of format \(apple ? "1 and 2" : "3 (Apple's shape)"); this manifest is format \(format), which names it \"\(given)\""
                        : "the download manifest's pack \(position) has both \"\(given)\" and \"\(other)\": give one",
                    check: names.apple)
            }
            if apple, let value = fields.removeValue(forKey: names.apple) { fields[names.ours] = value }
        }
        if apple, let host = fields.removeValue(forKey: "host") {
            guard case .object = host else {
                throw .invalid(
                    "the download manifest's pack \(position) has a \"host\" that is \(host.kindDescription), not an object such as {\"thirdParty\": {}}",
                    check: "host")
            }
        }
        return .object(fields)
    }

    /// The manifest as its format is written: the model's own keys for formats 1 and 2, Apple's
    /// shape for format 3 (each entry's `id`, `url` and a third-party `host`), as a JSON object to
    /// which a publisher can add keys of its own before ``JSONCoding`` writes it.
    package func wireDocument() throws(PackError) -> [String: JSONValue] {
        let document: JSONValue
        do {
            document = try JSONCoding.decoder.decode(JSONValue.self, from: JSONCoding.encoder.encode(self))
        } catch {
            throw PackError("cannot encode the download manifest: \(error)")
        }
        guard case .object(var top) = document else { throw PackError("the download manifest encodes as no object") }
        guard formatVersion == 3, case .array(let entries)? = top["assetPacks"] else { return top }
        top["assetPacks"] = .array(
            entries.map { entry in
                guard case .object(var fields) = entry else { return entry }
                for names in Self.appleNames {
                    if let value = fields.removeValue(forKey: names.ours) { fields[names.apple] = value }
                }
                fields["host"] = Self.thirdPartyHost
                return .object(fields)
            })
        return top
    }
}
