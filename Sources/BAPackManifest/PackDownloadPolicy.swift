/// When a pack is downloaded (Apple's three policies). Its JSON is Apple's:
/// `{"prefetch": {"installationEventTypes": [...]}}`, `{"onDemand": {}}`. The one model the
/// download manifest (``DownloadManifest``), the pack index and `ba pack build`'s manifest share
/// (BAPacks also names it `PackManifest.DownloadPolicy`).
package enum PackDownloadPolicy: Sendable, Hashable, Codable {
    /// Before the app can launch, on the events given.
    case essential(Set<PackInstallationEvent>)
    /// Started on the events given, going on in the background.
    case prefetch(Set<PackInstallationEvent>)
    /// Only when the app asks.
    case onDemand

    private enum CodingKeys: String, CodingKey { case essential, prefetch, onDemand }
    private struct Events: Codable { var installationEventTypes: [PackInstallationEvent] }
    private struct Empty: Codable {}

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let events = try container.decodeIfPresent(Events.self, forKey: .essential) {
            self = .essential(Set(events.installationEventTypes))
        } else if let events = try container.decodeIfPresent(Events.self, forKey: .prefetch) {
            self = .prefetch(Set(events.installationEventTypes))
        } else {
            _ = try container.decode(Empty.self, forKey: .onDemand)
            self = .onDemand
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .essential(let events):
            try container.encode(
                Events(installationEventTypes: events.sorted { $0.rawValue < $1.rawValue }), forKey: .essential)
        case .prefetch(let events):
            try container.encode(
                Events(installationEventTypes: events.sorted { $0.rawValue < $1.rawValue }), forKey: .prefetch)
        case .onDemand:
            try container.encode(Empty(), forKey: .onDemand)
        }
    }
}

/// Apple's installation event types.
package enum PackInstallationEvent: String, Sendable, Hashable, CaseIterable, Codable {
    case firstInstallation, subsequentUpdate
}

/// The names of a pack and its files on a server and a device.
package enum PackNames {
    /// 1–128 of `[A-Za-z0-9._-]`, not starting with a dot (it names a folder on the device).
    package static func isValidID(_ id: String) -> Bool {
        guard (1...128).contains(id.utf8.count), id.first != "." else { return false }
        return id.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }

    /// 64 lowercase hex digits, as every SHA-256 in pack metadata is written.
    package static func isSHA256(_ text: String) -> Bool {
        text.utf8.count == 64
            && text.utf8.allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            }
    }

    /// Where a pack's index is, relative to the published folder: `packs/ID/VERSION.json`.
    package static func indexPath(id: String, version: Int) -> String { "packs/\(id)/\(version).json" }
}
