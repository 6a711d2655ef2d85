import BACore

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

    /// The name that stands for every active state (created, waiting, downloading); the other
    /// names `listDownloads` accepts in `states` are ``DownloadState``'s (`created`, `waiting`,
    /// `downloading`, `finished`, `failed`).
    package static let activeName = "active"

    /// ``DownloadState``'s names in the order of a download's life, as messages list them.
    package static let stateNames: [String] = [DownloadState.created, .waiting, .downloading, .finished, .failed].map(
        \.description)

    /// The states `names` stand for (``DownloadState`` names and ``activeName``).
    /// - Throws: ``UnknownDownloadState`` for the first name that is neither.
    package static func states(_ names: [String]) throws(UnknownDownloadState) -> Set<DownloadState> {
        var states: Set<DownloadState> = []
        for name in names {
            if name == activeName {
                states.formUnion(DownloadState.allCases.filter(\.isActive))
            } else if let state = DownloadState.allCases.first(where: { $0.description == name }) {
                states.insert(state)
            } else {
                throw UnknownDownloadState(name: name)
            }
        }
        return states
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
            + (DownloadListing.stateNames + [DownloadListing.activeName]).joined(separator: ", ")
    }
}
