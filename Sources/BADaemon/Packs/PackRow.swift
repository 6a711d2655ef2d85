import BAPacks
import BAStore
import Foundation

/// One pack's row (`asset_pack`) as the pack service works with it: the manifest's entry and the
/// version being assembled as typed values, decoded once when the row is read (an entry basd
/// cannot decode is an error naming the pack, never "not listed"), and encoded when it is saved.
/// The row's other columns read and write through (`row.localVersion`, `row.requested`, …).
@dynamicMemberLookup
struct PackRow: Sendable {
    /// The row as the store keeps it (entries as JSON).
    private(set) var stored: StoredPack
    /// The download manifest's entry for the pack; nil when the manifest no longer lists it.
    var entry: PackService.Entry? {
        didSet { stored.entry = Self.encode(entry) }
    }
    /// The entry of the version being assembled, resumed after a restart.
    var target: PackService.Entry? {
        didSet { stored.target = Self.encode(target) }
    }

    /// A row read from the store.
    init(_ stored: StoredPack) throws(PackRowError) {
        self.stored = stored
        self.entry = try Self.decode(stored.entry, "entry", of: stored)
        self.target = try Self.decode(stored.target, "target", of: stored)
    }

    /// A row whose entry a manifest check is about to replace: its other columns as stored, its
    /// entries read where they can be (one that cannot is what the check replaces).
    init(replacingEntriesOf stored: StoredPack) {
        self.stored = stored
        self.entry = try? Self.decode(stored.entry, "entry", of: stored)
        self.target = try? Self.decode(stored.target, "target", of: stored)
    }

    /// A new row for a pack of `app`.
    init(app: String, pack: String) {
        stored = StoredPack(appIdentifier: app, packID: pack)
    }

    var key: PackService.Key { PackService.Key(app: stored.appIdentifier, pack: stored.packID) }

    /// A fresh attempt (or one that succeeded): no failure, no interrupted starts counted.
    mutating func clearFailure() {
        stored.failure = nil
        stored.failureCode = nil
        stored.interruptedStarts = 0
    }

    subscript<T>(dynamicMember path: WritableKeyPath<StoredPack, T>) -> T {
        get { stored[keyPath: path] }
        set { stored[keyPath: path] = newValue }
    }

    private static func decode(
        _ text: String?, _ column: String, of row: StoredPack
    ) throws(PackRowError)
        -> PackService.Entry?
    {
        guard let text else { return nil }
        do {
            return try JSONDecoder().decode(PackService.Entry.self, from: Data(text.utf8))
        } catch {
            throw PackRowError(
                "the stored \(column) of asset pack \(row.packID) of \(row.appIdentifier) is not a manifest entry (\(error)); `ba packs check \(row.appIdentifier)` records it again"
            )
        }
    }

    /// An entry as its column's JSON (it holds only strings, numbers and JSON values: encoding
    /// cannot fail).
    private static func encode(_ entry: PackService.Entry?) -> String? {
        guard let entry, let data = try? JSONEncoder().encode(entry) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}

/// A pack row basd could not read: the store failed, or a column holds what basd did not write.
struct PackRowError: Error, Sendable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension PackService {
    /// The rows of `app`'s packs (nil: every app's), by app then pack id.
    func rows(app: String?) throws(PackRowError) -> [PackRow] {
        let stored: [StoredPack]
        do { stored = try store.packs(app: app) } catch { throw PackRowError("\(error)") }
        var rows: [PackRow] = []
        rows.reserveCapacity(stored.count)
        for row in stored { rows.append(try PackRow(row)) }
        return rows
    }

    /// The row of one pack, or nil when it has none.
    func row(_ key: Key) throws(PackRowError) -> PackRow? {
        try rows(app: key.app).first { $0.packID == key.pack }
    }

    /// The row of `key`, or nil (logged) when it cannot be read.
    func readRow(_ key: Key) -> PackRow? {
        do {
            return try row(key)
        } catch {
            log("asset pack \(key): \(error)")
            return nil
        }
    }

    /// `body`'s result, or nil with what failed in the log (`what`: what was being done). For
    /// reads whose failure costs work or a report, never trust or space: a local index not read is
    /// fetched again, a leftover not listed stays for the next start.
    func logged<T>(_ what: String, _ body: () throws -> T) -> T? {
        do {
            return try body()
        } catch {
            log("\(what): \(error)")
            return nil
        }
    }

    func save(_ row: PackRow) {
        do { try store.savePack(row.stored) } catch { log("asset pack \(row.key): \(error)") }
    }
}
