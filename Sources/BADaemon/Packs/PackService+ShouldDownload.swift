import BACore
import BAPacks
import BAStore
import Foundation

// The extension decides (`ManagedDownloaderExtension.shouldDownload(_:)`, `should_download` in C):
// before an install or update downloads its essential and prefetch packs (executor).
extension PackService {
    /// For an installation trigger: asks `app`'s extension, once and with all of them, about the
    /// packs the event would download because their essential or prefetch policy names it
    /// (``PackDecision``), records each answer on the pack's row (`declined`, which the decision
    /// then reads), and goes on with `then`. Every other trigger goes on at once.
    ///
    /// An app without an extension, an extension without `should_download`, or a call that
    /// fails or cannot be made declines nothing: every pack downloads, the system default
    /// (``PackServiceDelegate/packs(_:askExtensionOf:about:decided:)``).
    func askExtension(_ trigger: PackDecision.Trigger, app: StoredApp, then: @escaping () -> Void) {
        // Without an extension there is nobody to ask (and nothing to log): every pack downloads.
        guard case .installation(let event) = trigger, app.extensionPath != nil, let delegate else { return then() }
        let rows: [PackRow]
        do { rows = try self.rows(app: app.bundleIdentifier) } catch {
            // Not asked: every pack downloads (the default), and the log says why.
            log("asset packs of \(app.bundleIdentifier): \(error)")
            return then()
        }
        // Of localized packs, only the app's language's are asked about (the others do not come).
        let localized = rows.contains { $0.entry?.language != nil }
        var choice: LanguageChoice?
        if localized {
            do { choice = try languageChoice(app: app, rows: rows) } catch {
                log(
                    "asset packs of \(app.bundleIdentifier): the language cannot be chosen (\(error)): its localized packs are not asked about"
                )
            }
        }
        let candidates = rows.compactMap { row -> (String, AssetPackRecord)? in
            if row.entry?.language != nil, choice?.fit(row) != .chosen { return nil }
            return Self.candidate(row, event: event).map { (row.packID, $0) }
        }
        guard !candidates.isEmpty else { return then() }
        log(
            "asset packs of \(app.bundleIdentifier): asking its extension about \(candidates.map(\.0).joined(separator: ", "))"
        )
        delegate.packs(self, askExtensionOf: app, about: candidates.map(\.1)) { [self] declined in
            let asked = Set(candidates.map(\.0))
            // Read again: the rows may have changed while the extension ran.
            let rows = logged("asset packs of \(app.bundleIdentifier): its extension's answer is not recorded") {
                try self.rows(app: app.bundleIdentifier)
            }
            for var row in rows ?? [] where asked.contains(row.packID) {
                let now = declined.contains(row.packID)
                guard row.declined != now else { continue }
                row.declined = now
                save(row)
            }
            if !declined.isEmpty {
                log(
                    "asset packs of \(app.bundleIdentifier): its extension declined \(declined.sorted().joined(separator: ", ")); they stay available on request"
                )
            }
            then()
        }
    }

    /// The pack as the extension is asked about it, if `event` would download it for its
    /// essential or prefetch policy (not yet current); nil otherwise.
    static func candidate(_ row: PackRow, event: PackManifest.InstallationEvent) -> AssetPackRecord? {
        guard let entry = row.entry else { return nil }
        switch entry.downloadPolicy {
        case .essential(let events), .prefetch(let events):
            guard events.contains(event) else { return nil }
        case .onDemand:
            return nil
        }
        let action = PackDecision.action(
            policy: entry.downloadPolicy, serverVersion: entry.version, localVersion: row.localVersion,
            requested: row.requested, trigger: .installation(event))
        guard case .download = action else { return nil }
        return AssetPackRecord(
            id: entry.assetPackID, version: Int64(entry.version), downloadSize: entry.downloadSize,
            userInfo: entry.userInfo.flatMap { try? JSONEncoder().encode($0) }.map(Array.init))
    }
}
