import BACore
import BADaemonProtocol
import BAStore

extension RequestRouter {
    /// Sends one page of a longer answer; the closure it is given runs on the executor once the
    /// page is written (true) or cannot be (false: the connection is gone).
    typealias PageSender = @Sendable (ServerMessage.Result, _ written: @escaping @Sendable (Bool) -> Void) -> Void

    /// `listDownloads` (executor): checks the request, then answers it page by page. Each page
    /// is one indexed store query that starts after the page before (``BAStore/downloads(matching:after:limit:)``),
    /// sent as its own parts; the next page is read once the last is written, in a later turn
    /// of the executor, so basd holds about one page of a listing whatever its length and other
    /// requests are served in between.
    ///
    /// - Throws: ``Refusal`` for an app that is not registered (55), an unknown state or a
    ///   negative limit (1006); later failures are sent as the answer's last part.
    func listDownloads(
        app: String?, states: [String]?, limit: Int?, reply: @escaping @Sendable (ServerMessage.Result) -> Void,
        page: @escaping PageSender
    ) throws {
        if let app, try store.app(app) == nil {
            throw Refusal(
                .callerConnectionNotAccepted, "app \(app) is not registered with basd (`ba apps` lists the apps)")
        }
        var filter = DownloadFilter(appIdentifier: app)
        if let states {
            do {
                filter.states = try DownloadListing.states(states)
            } catch {
                throw Refusal(.invalidRequest, "states: \(error)")
            }
        }
        if let limit, limit < 0 {
            throw Refusal(.invalidRequest, "limit: \(limit) is negative; give the most downloads to list, or 0 for all")
        }
        ListingStream(router: self, filter: filter, limit: limit, showsQueuePlaces: true, reply: reply, page: page)
            .next(after: nil)
    }

    /// Every download `filter` matches, answered as `downloads` page by page (an app's current
    /// downloads: without queue places, which its `BADownload`s have no room for).
    func streamDownloads(
        _ filter: DownloadFilter, reply: @escaping @Sendable (ServerMessage.Result) -> Void,
        page: @escaping PageSender
    ) {
        ListingStream(router: self, filter: filter, limit: nil, showsQueuePlaces: false, reply: reply, page: page)
            .next(after: nil)
    }
}

/// One `listDownloads` answer on its way, page by page (executor only).
private final class ListingStream: @unchecked Sendable {
    let router: RequestRouter
    let filter: DownloadFilter
    /// The request's limit: nil answers `downloads` with every match, a number `downloadList`
    /// (0: every match).
    let limit: Int?
    /// Whether queued downloads get their place (``TransferCoordinator/queuePositions()``).
    let showsQueuePlaces: Bool
    let reply: @Sendable (ServerMessage.Result) -> Void
    let page: RequestRouter.PageSender
    /// Downloads sent so far.
    var sent = 0
    /// Each queued download's place, read once, when a page first shows a queued download (a
    /// snapshot: one that starts later shows as started; one queued later shows without a place).
    var queuePositions: [String: Int]?

    init(
        router: RequestRouter, filter: DownloadFilter, limit: Int?, showsQueuePlaces: Bool,
        reply: @escaping @Sendable (ServerMessage.Result) -> Void, page: @escaping RequestRouter.PageSender
    ) {
        self.router = router
        self.filter = filter
        self.limit = limit
        self.showsQueuePlaces = showsQueuePlaces
        self.reply = reply
        self.page = page
    }

    /// Reads and sends the page after `cursor`; the last one as the answer.
    func next(after cursor: DownloadListCursor?) {
        router.executor.assertOnExecutor()
        let wanted = (limit ?? 0) > 0 ? (limit ?? 0) - sent : Int.max
        // Each page is one turn of the executor, so other clients wait for at most a page: its
        // size is learned to take about 10 ms (2,000 rows held `ba status` for more than half a
        // second in a debug build under load; issue 19).
        let started = ContinuousClock.now
        var read = 0
        // Reading the queue's places (once per listing) is not the page's cost: left out of the
        // page size it teaches.
        var placesTook = Duration.zero
        defer { router.listingPage.record(read, took: ContinuousClock.now - started - placesTook) }
        do {
            let rows = try router.store.downloads(
                matching: filter, after: cursor, limit: min(router.listingPage.current, wanted))
            read = rows.downloads.count
            let parked = router.delivery.parkedReasons(of: rows.downloads)
            if showsQueuePlaces, queuePositions == nil,
                rows.downloads.contains(where: {
                    $0.state.isActive && router.transfers.waitsInQueue($0.uniqueIdentifier)
                })
            {
                // One pass over the queue (100,000 queued: about 0.2 s in a debug build), once.
                let placesStarted = ContinuousClock.now
                queuePositions = router.transfers.queuePositions()
                placesTook = ContinuousClock.now - placesStarted
            }
            let infos = rows.downloads.map { download in
                var info = router.transfers.info(download, queuePositions: queuePositions)
                info.parkedEvent = parked[download.uniqueIdentifier]
                return info
            }
            sent += infos.count
            guard let following = rows.next else {
                return finish(infos, notShown: 0)
            }
            if infos.count == wanted {
                return finish(infos, notShown: try router.store.downloadCount(matching: filter, after: following))
            }
            page(result(infos, notShown: 0)) { [self] written in
                // A closed connection ends the listing; nothing is left to answer.
                if written { next(after: following) }
            }
        } catch {
            reply(Refusal(error).result)
        }
    }

    private func finish(_ infos: [DownloadInfo], notShown: Int) {
        reply(result(infos, notShown: notShown))
        // A long listing allocated memory that glibc would otherwise keep.
        if sent > 500 { router.releaseMemorySoon() }
    }

    private func result(_ infos: [DownloadInfo], notShown: Int) -> ServerMessage.Result {
        limit == nil ? .downloads(infos) : .downloadList(DownloadListing(downloads: infos, notShown: notShown))
    }
}
