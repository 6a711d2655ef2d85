/// The answer to a `listDownloads` request with a `limit` (``ServerMessage/Result/downloadList(_:)``).
///
/// On the wire: `{"type": "downloadList", "downloadList": {"downloads": […], "notShown": 99000}}`.
/// A long list comes in parts (`"more": true`) like every listing; `notShown` is in the last one.
package struct DownloadListing: Sendable, Hashable, Codable {
    /// The downloads shown, in listing order (by app, then oldest first).
    package var downloads: [DownloadInfo]
    /// How many more downloads matched the request but were cut by its `limit`.
    package var notShown: Int

    /// Creates a listing.
    package init(downloads: [DownloadInfo], notShown: Int = 0) {
        self.downloads = downloads
        self.notShown = notShown
    }

    /// The state names `listDownloads` accepts in `states`, with their `BADownload.State` raw
    /// values, in the order of the states' life: `created`, `waiting`, `downloading`,
    /// `finished`, `failed`.
    package static let stateNames: KeyValuePairs<String, Int> = [
        "created": 0, "waiting": 1, "downloading": 2, "finished": 3, "failed": -1,
    ]

    /// The name that stands for every active state (created, waiting, downloading).
    package static let activeName = "active"

    /// The raw state values `names` stand for (``stateNames`` and ``activeName``).
    /// - Throws: ``UnknownDownloadState`` for the first name that is neither.
    package static func stateValues(_ names: [String]) throws(UnknownDownloadState) -> Set<Int> {
        var values: Set<Int> = []
        for name in names {
            if name == activeName {
                values.formUnion([0, 1, 2])
            } else if let value = stateNames.first(where: { $0.key == name })?.value {
                values.insert(value)
            } else {
                throw UnknownDownloadState(name: name)
            }
        }
        return values
    }
}

/// A download state name that `listDownloads` does not know.
package struct UnknownDownloadState: Error, Sendable, Hashable, CustomStringConvertible {
    /// The name as given.
    package var name: String

    /// Creates the error.
    package init(name: String) { self.name = name }

    /// `unknown download state "x"; the states are created, waiting, …`.
    package var description: String {
        "unknown download state \"\(name)\"; the states are "
            + (DownloadListing.stateNames.map(\.key) + [DownloadListing.activeName]).joined(separator: ", ")
    }
}
