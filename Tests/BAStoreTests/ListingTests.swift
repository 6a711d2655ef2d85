import BAStore
import Foundation
import Testing

@Suite("BAStore listing: filters and keyset pages") struct ListingTests {
    /// Three apps, registered in an order other than their names', with downloads in every state,
    /// many scheduled at the same instant (ties in `created_at`, ordered by insertion).
    static func populate(_ test: TestStore) throws -> [StoredDownload] {
        for app in ["com.example.c", "com.example.a", "com.example.b"] { try test.registerApp(app) }
        var stored: [StoredDownload] = []
        try test.store.batch("populating") {
            for index in 0..<60 {
                if index % 9 == 0 { test.clock.advance() }
                let app = ["com.example.c", "com.example.a", "com.example.b"][index % 3]
                let download = try test.store.schedule(
                    StoredDownload(appIdentifier: app, identifier: "d\(index)", url: "https://cdn.example.com/\(index)")
                )
                switch index % 5 {
                case 0:
                    try test.store.markFinished(uniqueIdentifier: download.uniqueIdentifier, destination: "/x")
                case 1:
                    try test.store.markFailed(
                        uniqueIdentifier: download.uniqueIdentifier, error: .init(domain: "d", code: 1, message: "m"))
                case 2:
                    try test.store.recordBegan(
                        uniqueIdentifier: download.uniqueIdentifier, offset: 0, isForeground: false)
                default:
                    break
                }
                stored.append(try #require(try test.store.download(uniqueIdentifier: download.uniqueIdentifier)))
            }
        }
        return stored
    }

    /// Every page of a listing, `size` at a time.
    static func pages(_ store: BAStore, _ filter: DownloadFilter, size: Int) throws -> [[StoredDownload]] {
        var pages: [[StoredDownload]] = []
        var cursor: DownloadListCursor?
        for _ in 0..<1000 {
            let page = try store.downloads(matching: filter, after: cursor, limit: size)
            pages.append(page.downloads)
            guard let next = page.next else { return pages }
            cursor = next
        }
        throw BAStoreError(.invalidArgument, "the listing did not end", path: store.path)
    }

    @Test func pagesCoverEveryMatchOnceInAppThenSchedulingOrder() throws {
        let test = try TestStore()
        defer { test.remove() }
        let stored = try Self.populate(test)
        // Stable sort: by app, then scheduling order (the insertion order of `stored`).
        let expected = stored.enumerated().sorted {
            ($0.element.appIdentifier, $0.offset) < ($1.element.appIdentifier, $1.offset)
        }
        .map(\.element.uniqueIdentifier)

        for size in [1, 7, 20, 60, 100] {
            let pages = try Self.pages(test.store, DownloadFilter(), size: size)
            #expect(pages.flatMap { $0 }.map(\.uniqueIdentifier) == expected, "pages of \(size)")
            #expect(pages.dropLast().allSatisfy { $0.count == size })
        }

        let ended = DownloadFilter(appIdentifier: "com.example.a", states: [.finished, .failed])
        let listed = try Self.pages(test.store, ended, size: 3).flatMap { $0 }
        #expect(
            listed.map(\.uniqueIdentifier)
                == expected.filter { id in
                    stored.contains {
                        $0.uniqueIdentifier == id && $0.appIdentifier == "com.example.a" && !$0.state.isActive
                    }
                })
        #expect(!listed.isEmpty && listed.allSatisfy { $0.appIdentifier == "com.example.a" && !$0.state.isActive })

        let downloading = try Self.pages(test.store, DownloadFilter(states: [.downloading]), size: 5).flatMap { $0 }
        #expect(downloading.count == 12 && downloading.allSatisfy { $0.state == .downloading })
    }

    @Test func countsWhatFollowsACursor() throws {
        let test = try TestStore()
        defer { test.remove() }
        _ = try Self.populate(test)
        #expect(try test.store.downloadCount(matching: DownloadFilter()) == 60)
        let waiting = DownloadFilter(states: [.waiting])
        #expect(try test.store.downloadCount(matching: waiting) == 24)
        let first = try test.store.downloads(matching: waiting, limit: 10)
        #expect(try test.store.downloadCount(matching: waiting, after: first.next) == 14)
        let app = DownloadFilter(appIdentifier: "com.example.b")
        let page = try test.store.downloads(matching: app, limit: 15)
        #expect(page.downloads.count == 15 && page.next != nil)
        #expect(try test.store.downloadCount(matching: app, after: page.next) == 5)
        #expect(try test.store.downloads(matching: app, after: page.next, limit: 15).downloads.count == 5)
        #expect(try test.store.downloadCount(matching: DownloadFilter(appIdentifier: "com.example.none")) == 0)

        let error = #expect(throws: BAStoreError.self) { try test.store.downloads(matching: app, limit: 0) }
        #expect(error?.code == .invalidArgument)
    }
}
