import Synchronization

/// Items handed from another thread to the executor a batch at a time: the thread puts, and asks
/// the executor to take only when the inbox was empty; the executor takes all there are. One
/// executor turn then handles everything that arrived meanwhile (engine events, the results of
/// extension calls).
final class Inbox<Item: Sendable>: Sendable {
    private let items = Mutex<[Item]>([])

    /// Adds `newItems`; true when the inbox was empty (the executor must be asked to take).
    func put(_ newItems: [Item]) -> Bool {
        items.withLock { items in
            let wasEmpty = items.isEmpty
            items.append(contentsOf: newItems)
            return wasEmpty && !newItems.isEmpty
        }
    }

    /// The first `count` items (in order) and whether more are left. When more are left the
    /// inbox stays non-empty, so ``put(_:)`` does not ask for a take: the caller must take again.
    func take(atMost count: Int) -> (items: [Item], more: Bool) {
        items.withLock { items in
            guard items.count > count else {
                defer { items.removeAll(keepingCapacity: true) }
                return (items, false)
            }
            defer { items.removeFirst(count) }
            return (Array(items.prefix(count)), true)
        }
    }

    /// Everything put since the last take, in order.
    func take() -> [Item] {
        items.withLock { items in
            defer { items.removeAll(keepingCapacity: true) }
            return items
        }
    }
}
