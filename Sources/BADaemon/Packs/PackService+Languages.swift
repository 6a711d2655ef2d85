import BAAppBundle
import BACore
import BADaemonProtocol
import BAPacks
import BAStore
import Foundation

// Localized packs (Apple's OS 27 `language`), on the executor: which language an app's localized
// packs are installed in (``PackLanguage/resolve(available:preferred:override:primary:fallsBack:)``),
// the app's own language (`AssetPackManager.resolvedLanguage`) and preferred languages kept in
// `pack_language`, and the switch: the new language's packs first, the old ones removed only
// once the new ones are in place (`docs/packs.md`, "Localized packs").
extension PackService {
    /// The preferred languages of basd's own environment (`LANGUAGE`, `LC_ALL`, `LC_MESSAGES`,
    /// `LANG`, in glibc's order), read once.
    static let environmentLanguages: [String] = PackLanguage.preferred(
        environment: ProcessInfo.processInfo.environment)

    /// How one pack stands against its app's language.
    enum LanguageFit: Sendable, Hashable {
        /// It has no language (or is no longer listed): policies as ever.
        case notLocalized
        /// Its language is the one chosen.
        case chosen
        /// Another language: not installed by a policy; removed once the chosen one is in place,
        /// unless the app asked for it.
        case other
        /// Its language is not a BCP-47 tag: refused (never installed).
        case invalid
    }

    /// An app's languages: those its localized packs are available in, the one chosen, and what
    /// is kept for it.
    struct LanguageChoice: Sendable {
        var available: [String] = []
        var chosen: String?
        var stored: StoredPackLanguage?

        func fit(_ row: PackRow) -> LanguageFit {
            guard let entry = row.entry, entry.language != nil else { return .notLocalized }
            guard let language = entry.canonicalLanguage else { return .invalid }
            return language == chosen ? .chosen : .other
        }
    }

    /// The error code of a pack refused for its language (refused metadata).
    static let invalidLanguageCode = 1102

    /// `app`'s languages from its rows. Throws when basd cannot read what it keeps for the app:
    /// the caller then neither installs nor removes a localized pack (fail closed).
    func languageChoice(app: StoredApp, rows: [PackRow]) throws(PackRowError) -> LanguageChoice {
        let available = Set(rows.compactMap { $0.entry?.canonicalLanguage }).sorted()
        let stored: StoredPackLanguage?
        do { stored = try store.packLanguage(app: app.bundleIdentifier) } catch { throw PackRowError("\(error)") }
        guard !available.isEmpty else { return LanguageChoice(stored: stored) }
        let preferred = stored?.preferred ?? Self.environmentLanguages
        var chosen = PackLanguage.resolve(
            available: available, preferred: preferred, override: stored?.override, fallsBack: false)
        if chosen == nil {
            // Only now the app's primary language (its Info.plist's CFBundleDevelopmentRegion):
            // unreadable, the first available language is taken, and the Info.plist is read
            // again next time (only what was read is kept).
            var primary: String?
            if let known = primaryLanguages[app.bundleIdentifier] {
                primary = known
            } else {
                do {
                    primary = try AppBundle.load(directory: app.appDirectory).developmentRegion
                    primaryLanguages[app.bundleIdentifier] = .some(primary)
                } catch {
                    log(
                        "asset packs of \(app.bundleIdentifier): its Info.plist cannot be read (\(error)): the first available language stands in for its primary language"
                    )
                }
            }
            chosen = PackLanguage.resolve(available: available, preferred: [], primary: primary)
        }
        return LanguageChoice(available: available, chosen: chosen, stored: stored)
    }

    /// The choice of `app` (by name) from the store, or nil (logged) when it cannot be read.
    func languageChoice(app name: String) -> (app: StoredApp, rows: [PackRow], choice: LanguageChoice)? {
        do {
            guard let app = try store.app(name) else { return nil }
            let rows = try self.rows(app: name)
            return (app, rows, try languageChoice(app: app, rows: rows))
        } catch {
            log("asset packs of \(name): the language cannot be chosen: \(error)")
            return nil
        }
    }

    /// Whether `act(on:)` goes on with a localized pack for `trigger` (nil `choice`: it could not
    /// be read, nothing localized is installed). A request (`ensure`) downloads any language, as
    /// Apple's manual downloads do; a pack of another language that a policy started is stopped.
    func proceedsWithLanguage(_ row: PackRow, trigger: PackDecision.Trigger, choice: LanguageChoice?) -> Bool {
        guard let entry = row.entry, entry.language != nil else { return true }
        guard entry.hasValidLanguage else {
            refuseLanguage(row)
            return false
        }
        if case .ensure = trigger { return true }
        guard let choice else { return false }
        switch choice.fit(row) {
        case .notLocalized, .chosen: return true
        case .invalid: return false
        case .other:
            if jobs[row.key] != nil, !row.requested {
                stopJob(row.key)
                log("asset pack \(row.key) is for \(entry.language ?? ""), not \(choice.chosen ?? "none"): stopped")
            }
            return false
        }
    }

    private func refuseLanguage(_ row: PackRow) {
        let message =
            "the download manifest gives asset pack \(row.packID) the language \"\(String((row.entry?.language ?? "").prefix(40)))\", which is not a BCP-47 tag: the pack is refused"
        guard row.failure != message else { return }
        var row = row
        row.failure = message
        row.failureCode = Self.invalidLanguageCode
        save(row)
        log("asset pack \(row.key): \(message)")
    }

    /// After `apply` and after each job of `app` ends: records the language in place (a change
    /// from the one recorded tells the extension, `BAContentRequest.languageChange`), removes the
    /// local packs of other languages once every pack of the chosen language its policy wants
    /// is local (never before: a failed download keeps the old language), and answers the
    /// `reconcileLanguages` requests waiting for that.
    func settleLanguages(app name: String) {
        guard let (app, rows, choice) = languageChoice(app: name) else {
            finishLanguageWaits(name, failure: .internalError("basd could not read the app's asset packs"))
            return
        }
        recordResolved(app, choice: choice)
        guard choice.chosen != nil else { return finishLanguageWaits(name, failure: nil) }
        var pending = false
        var failed: [String] = []
        for row in rows where choice.fit(row) == .chosen {
            if jobs[row.key] != nil {
                pending = true
            } else if row.localVersion == nil, Self.wantedByPolicy(row) {
                failed.append(row.packID)
            }
        }
        guard !pending else { return }
        guard failed.isEmpty else {
            log(
                "asset packs of \(name): \(failed.sorted().joined(separator: ", ")) of \(choice.chosen ?? "") are not local: the other languages' packs stay"
            )
            finishLanguageWaits(
                name,
                failure: .other(
                    "the packs of \(choice.chosen ?? "") could not be made local: \(failed.sorted().joined(separator: ", "))"
                ))
            return
        }
        for row in rows where choice.fit(row) == .other && row.localVersion != nil && !row.requested {
            guard jobs[row.key] == nil else { continue }
            log(
                "asset pack \(row.key) is for \(row.entry?.language ?? ""), not \(choice.chosen ?? ""): version \(row.localVersion ?? 0) is removed"
            )
            removePack(row.key, row: row, forget: false)
            send(PackEvent(.removed, appIdentifier: name, assetPackID: row.packID, version: row.localVersion))
        }
        finishLanguageWaits(name, failure: nil)
    }

    /// A pack a policy installs without being asked: essential or prefetch on the first
    /// installation, not declined by the extension.
    static func wantedByPolicy(_ row: PackRow) -> Bool {
        guard !row.declined, let policy = row.entry?.downloadPolicy else { return row.requested }
        switch policy {
        case .essential(let events), .prefetch(let events): return events.contains(.firstInstallation) || row.requested
        case .onDemand: return row.requested
        }
    }

    private func recordResolved(_ app: StoredApp, choice: LanguageChoice) {
        guard let chosen = choice.chosen, chosen != choice.stored?.resolved else { return }
        var stored = choice.stored ?? StoredPackLanguage(appIdentifier: app.bundleIdentifier)
        let previous = stored.resolved
        stored.resolved = chosen
        do { try store.setPackLanguage(stored) } catch {
            log("asset packs of \(app.bundleIdentifier): cannot record the language \(chosen): \(error)")
            return
        }
        guard let previous else {
            log("asset packs of \(app.bundleIdentifier): language \(chosen)")
            return
        }
        log("asset packs of \(app.bundleIdentifier): language changed from \(previous) to \(chosen)")
        delegate?.packs(self, languageChangedFor: app)
    }

    // MARK: Requests

    /// `setLanguage`: keeps (or clears) the app's own language. Nothing is downloaded or removed
    /// (Apple: until `reconcilePreferredLanguages()`).
    func setLanguage(app name: String, language: String?) -> ServerMessage.Result {
        var canonical: String?
        if let language {
            guard let tag = PackLanguage.canonical(language) else {
                return Refusal(
                    .invalidRequest, "\"\(String(language.prefix(40)))\" is not a BCP-47 language tag (e.g. en, en-GB)"
                ).result
            }
            canonical = tag
        }
        do {
            var stored = try store.packLanguage(app: name) ?? StoredPackLanguage(appIdentifier: name)
            stored.override = canonical
            try store.setPackLanguage(stored)
        } catch {
            return Refusal(.internalError, "basd could not record the language: \(error)").result
        }
        log("asset packs of \(name): its language is \(canonical ?? "the user's again")")
        return .packs(languageReport(app: name))
    }

    /// `reconcileLanguages`: keeps the preferred languages the app sent (if any), installs the
    /// chosen language's packs by their policies, and answers once they are local and the other
    /// languages' packs removed (or one of them failed: then nothing was removed).
    func reconcileLanguages(
        app name: String, preferred: [String]?, reply: @escaping @Sendable (ServerMessage.Result) -> Void
    ) {
        let app: StoredApp
        do {
            guard let found = try store.app(name) else {
                return reply(Refusal(.invalidRequest, "app \(name) is not registered with basd").result)
            }
            app = found
        } catch {
            return reply(Refusal(.internalError, "basd could not read app \(name): \(error)").result)
        }
        if let preferred {
            guard preferred.count <= 32 else {
                return reply(Refusal(.invalidRequest, "at most 32 preferred languages").result)
            }
            do {
                var stored = try store.packLanguage(app: name) ?? StoredPackLanguage(appIdentifier: name)
                stored.preferred = preferred.compactMap(PackLanguage.canonical)
                try store.setPackLanguage(stored)
            } catch {
                return reply(Refusal(.internalError, "basd could not record the languages: \(error)").result)
            }
        }
        languageWaits[name, default: []].append { [self] failure in
            if let failure {
                reply(Refusal(failure.code, failure.message).result)
            } else {
                reply(.packs(languageReport(app: name)))
            }
        }
        // The chosen language's packs, by their policies as at a first installation; the others
        // are stopped (``proceedsWithLanguage(_:trigger:choice:)``) and removed once that is done.
        guard let (_, rows, choice) = languageChoice(app: name) else {
            return finishLanguageWaits(name, failure: .internalError("basd could not read the app's asset packs"))
        }
        for row in rows where choice.fit(row) != .notLocalized {
            act(on: row, app: app, trigger: .installation(.firstInstallation), language: choice)
        }
        settleLanguages(app: name)
    }

    func finishLanguageWaits(_ app: String, failure: PackCheckFailure?) {
        let waiting = languageWaits.removeValue(forKey: app) ?? []
        for done in waiting { done(failure) }
    }

    /// One app's listing with its languages.
    func languageReport(app name: String) -> PackReport {
        var report = PackReport(packs: listing(app: name))
        if let (_, _, choice) = languageChoice(app: name) {
            report.resolvedLanguage = choice.chosen
            report.availableLanguages = choice.available
        }
        return report
    }
}

extension PackServiceDelegate {
    func packs(_ service: PackService, languageChangedFor app: StoredApp) {}
}
