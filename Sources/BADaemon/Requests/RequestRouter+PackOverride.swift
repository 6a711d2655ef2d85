import BACore
import BADaemonProtocol
import BADownloadEngine
import BAStore

// `ba packs override APP URL` / `--clear` (executor): the user's test loop (`ba pack serve`).
extension RequestRouter {
    /// Points an app's download manifest at a loopback URL (or clears that), then reads it.
    ///
    /// Trust: only ba sets one (an app's connection is refused before this); the URL must pass
    /// the rules of any download (https, or http to loopback), basd's `allowedHosts`, and be on
    /// this machine (loopback): an override is a test loop, not a way to move an app to another
    /// CDN. A signed app's manifest is still checked with its key, and the override's sequence
    /// is kept apart from the CDN's (``PackService/trustKey(publicKey:override:)``).
    func overridePacks(_ command: PackCommand, reply: @escaping @Sendable (ServerMessage.Result) -> Void) {
        guard let name = command.app, !name.isEmpty else {
            reply(Refusal(.invalidRequest, "`packs override` needs an app").result)
            return
        }
        let app: StoredApp
        do {
            guard let found = try store.app(name) else {
                reply(Refusal(.invalidRequest, "app \(name) is not registered with basd").result)
                return
            }
            app = found
        } catch {
            reply(Refusal(error).result)
            return
        }
        guard packs.hasPacks(name) else {
            reply(
                Refusal(
                    .invalidRequest,
                    "\(name) gets no asset packs (its Info.plist needs BAHasManagedAssetPacks and BAManifestURL): there is no download manifest to override"
                ).result)
            return
        }
        if let url = command.url {
            if let reason = URLPolicy.check(url, allowLists: [transfers.trust.allowedHosts].compactMap { $0 }) {
                reply(Refusal(.invalidRequest, "cannot point \(name) at \(url): \(reason)").result)
                return
            }
            guard ParsedURL(url)?.isLoopback == true else {
                reply(
                    Refusal(
                        .invalidRequest,
                        "cannot point \(name) at \(url): an override is for a test server on this machine (127.0.0.1, ::1 or localhost, `ba pack serve`)"
                    ).result)
                return
            }
        }
        do {
            try store.setPackOverride(app: name, url: command.url)
        } catch {
            reply(Refusal(error).result)
            return
        }
        guard let url = command.url else {
            log("\(name): download manifest override cleared; its BAManifestURL is read again")
            reply(.packs(PackReport(packs: packs.listing(app: name), overrides: packOverrides(app: name))))
            return
        }
        log("\(name): download manifest overridden with \(url) (ba packs override) until cleared")
        // Read at once, so that the packs listed are the test server's.
        packs.check(app, trigger: .periodic) { [self] failure in
            executor.async { [self] in
                reply(
                    .packs(
                        PackReport(
                            packs: packs.listing(app: name), problems: failure.map { [$0.message] } ?? [],
                            overrides: packOverrides(app: name))))
            }
        }
    }

    /// The overrides of `app` (nil: of every app), or nil when there are none. Unreadable: nil,
    /// and logged (a listing is not a security decision; the manifest check reads them again).
    func packOverrides(app: String?) -> [String: String]? {
        let all: [String: String]
        do { all = try store.packOverrides() } catch {
            log("cannot read the manifest overrides: \(error)")
            return nil
        }
        let chosen = app.map { name in all.filter { $0.key == name } } ?? all
        return chosen.isEmpty ? nil : chosen
    }
}
