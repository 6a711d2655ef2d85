import BAStore
import Foundation

// What the window asks for, done (executor).
extension TransferCoordinator {
    /// Performs `actions` of ``window`` in order; `row` is the download the event was about, when
    /// the caller has it (a download handed to the engine is always one the caller has).
    func perform(_ actions: [TransferWindow.Action], row: StoredDownload? = nil) {
        perform(actions) { id in row?.uniqueIdentifier == id ? row : nil }
    }

    /// Performs `actions` in order; `row(id)` is the download `id` as the caller has it.
    func perform(_ actions: [TransferWindow.Action], row: (String) -> StoredDownload?) {
        for action in actions {
            switch action {
            case .start(let id):
                if let download = row(id), download.download.isAssetPack {
                    startPack(download)
                    continue
                }
                guard let download = row(id), let request = engineRequest(for: download) else {
                    // engineRequest logged why; a missing row is a caller's mistake, logged here.
                    if row(id) == nil { log("download \(id) was to start, but its row was not at hand") }
                    perform(window.handle(.unstartable(id)))
                    continue
                }
                engine.add(request)
            case .resumeAfterSpaceWait(let id):
                do {
                    guard let download = try store.download(uniqueIdentifier: id), download.state.isActive else {
                        continue
                    }
                    log("download \(id): there is disk space again; resuming")
                    perform(window.handle(.admit(.init(download))), row: download)
                } catch {
                    log("resuming download \(id) after a wait for space failed: \(error)")
                }
            case .promoteInEngine(let id):
                engine.promote(id)
            case .retryInEngine(let id):
                engine.retryNow(id)
            case .retryAllInEngine(let count):
                log("the network changed: \(count) transfer(s) waiting to retry try again now")
                engine.retryNow(nil)
            case .stopInEngine(let id):
                if packDownloads.remove(id) != nil {
                    delegate?.transfers(self, stopPack: id)
                } else {
                    engine.cancel(id)
                }
            case .deletePartialFile(let id):
                guard let download = row(id) else { continue }
                let partial = partialPath(of: download)
                unlink(partial)
                unlink(partial + ".validator")
            case .holdBackground(let held):
                engine.holdBackground(held)
            case .readQueue(let limit, let excluded):
                readQueue(limit: limit, excluding: excluded)
            case .armLookAgain:
                executor.after(configuration.spaceRetryInterval) { [self] in lookAgain() }
            case .measureFreeSpace:
                let free = (try? configuration.freeSpace(containers.groupsDirectory)) ?? 0
                perform(window.handle(.freeSpaceMeasured(free)))
            }
        }
    }

    /// Hands the engine the next downloads waiting in the store, in queue order (one indexed read
    /// for all of them); one whose file is already complete is recorded finished instead.
    private func readQueue(limit: Int, excluding excluded: Set<String>) {
        do {
            let next = try store.activeDownloads(excluding: excluded, limit: limit)
            var fresh: [String: StoredDownload] = [:]
            var candidates: [TransferWindow.Candidate] = []
            for download in next where !recognizeCompleteFile(download) {
                fresh[download.uniqueIdentifier] = download
                candidates.append(.init(download))
            }
            perform(window.handle(.queueRead(candidates, exhausted: next.count < limit))) { fresh[$0] }
        } catch {
            log("reading the next queued downloads failed: \(error); trying again when a transfer ends")
        }
    }
}

extension TransferWindow.Candidate {
    /// A stored download as the window weighs it.
    init(_ download: StoredDownload) {
        self.init(
            id: download.uniqueIdentifier, priority: download.priority,
            isUrgent: download.isForeground || download.isEssential)
    }
}
