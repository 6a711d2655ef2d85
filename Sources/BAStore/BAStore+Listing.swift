import BACore
internal import GRDB

/// Which downloads a listing (`ba downloads`) shows: one app's or every app's, in some states.
package struct DownloadFilter: Sendable, Hashable {
    /// Only this app's downloads; nil for every app's.
    package var appIdentifier: String?
    /// Only downloads in these states; every state when it holds them all.
    package var states: Set<DownloadState>

    /// Creates a filter; the defaults match every download.
    package init(appIdentifier: String? = nil, states: Set<DownloadState> = Set(DownloadState.allCases)) {
        self.appIdentifier = appIdentifier
        self.states = states
    }
}

/// Where a listing goes on: just after the last download of the page before.
///
/// Listings are in (app, scheduled time, insertion) order, the order of the index
/// `download_app` (`(app_id, created_at)`, whose entries end with the rowid), so a page is one
/// index range scan that starts after the cursor: no page reads the rows before it (keyset
/// pagination). A download scheduled or ended while a listing goes on is shown at most once.
package struct DownloadListCursor: Sendable, Hashable {
    let appIdentifier: String
    /// The raw `created_at` text (compared as stored, so no date round trip can skip a row).
    let createdAt: String
    let rowid: Int64
}

/// A page of a listing.
package struct DownloadListPage: Sendable {
    /// The downloads, in listing order.
    package var downloads: [StoredDownload]
    /// Where the next page starts; nil when this page is the last.
    package var next: DownloadListCursor?
}

extension BAStore {
    /// A page of at most `limit` downloads matching `filter`, after `cursor` (from the start
    /// when nil), ordered by app, then oldest first.
    ///
    /// One indexed query (the app filter is an equality on `download_app`, the state filter a
    /// condition on the rows that index range visits); no row before the cursor is read.
    /// - Throws: ``BAStoreError/Code/invalidArgument`` when `limit` is not positive.
    package func downloads(
        matching filter: DownloadFilter, after cursor: DownloadListCursor? = nil, limit: Int
    ) throws(BAStoreError) -> DownloadListPage {
        guard limit > 0 else {
            throw BAStoreError(.invalidArgument, "a page holds at least one download, not \(limit)", path: path)
        }
        let (condition, arguments) = Self.listingCondition(filter, after: cursor)
        return try read("listing downloads") { db in
            let rows = try Row.fetchAllCached(
                db,
                sql: """
                    SELECT \(StoredDownload.columns), rowid AS listing_rowid FROM download
                    WHERE \(condition) ORDER BY app_id, created_at, rowid LIMIT ?
                    """, arguments: arguments + [limit])
            var page = DownloadListPage(downloads: [], next: nil)
            page.downloads.reserveCapacity(rows.count)
            for row in rows { page.downloads.append(try StoredDownload(row: row)) }
            if rows.count == limit, let last = rows.last {
                page.next = DownloadListCursor(
                    appIdentifier: try last.decode(forColumn: "app_id"),
                    createdAt: try last.decode(forColumn: "created_at"),
                    rowid: try last.decode(forColumn: "listing_rowid"))
            }
            return page
        }
    }

    /// How many downloads match `filter` after `cursor` (all of them when nil), counted by
    /// SQLite on the same index range as ``downloads(matching:after:limit:)``, without reading them
    /// into memory.
    package func downloadCount(
        matching filter: DownloadFilter, after cursor: DownloadListCursor? = nil
    )
        throws(BAStoreError) -> Int
    {
        let (condition, arguments) = Self.listingCondition(filter, after: cursor)
        return try read("counting downloads") { db in
            try Int.fetchOneCached(db, sql: "SELECT count(*) FROM download WHERE \(condition)", arguments: arguments)
                ?? 0
        }
    }

    /// The `WHERE` condition of a listing and its arguments. At most eight distinct statements
    /// (app or not, states or not, cursor or not), each prepared once per connection.
    private static func listingCondition(
        _ filter: DownloadFilter, after cursor: DownloadListCursor?
    ) -> (String, StatementArguments) {
        var conditions: [String] = []
        var arguments: StatementArguments = []
        switch (filter.appIdentifier, cursor) {
        case (let app?, let cursor?):
            conditions.append("app_id = ? AND (created_at, rowid) > (?, ?)")
            arguments += [app, cursor.createdAt, cursor.rowid]
        case (let app?, nil):
            conditions.append("app_id = ?")
            arguments += [app]
        case (nil, let cursor?):
            conditions.append("(app_id, created_at, rowid) > (?, ?, ?)")
            arguments += [cursor.appIdentifier, cursor.createdAt, cursor.rowid]
        case (nil, nil):
            break
        }
        if filter.states != Set(DownloadState.allCases) {
            // A bit per state (state + 1, as states start at -1): one statement for any set.
            let mask = filter.states.reduce(0) { $0 | (1 << ($1.rawValue + 1)) }
            conditions.append("((? >> (state + 1)) & 1) = 1")
            arguments += [mask]
        }
        return (conditions.isEmpty ? "1" : conditions.joined(separator: " AND "), arguments)
    }
}
