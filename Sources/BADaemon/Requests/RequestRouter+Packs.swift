import BAAppBundle
import BADaemonProtocol
import BAStore
import Foundation

// `ba packs …` and an app's AssetPackManager (executor).
extension RequestRouter {
    func servePacks(
        _ command: PackCommand, from client: ClientInfo, session: Session,
        reply: @escaping @Sendable (ServerMessage.Result) -> Void
    ) {
        func need(_ value: String?, _ what: String) -> String? {
            if value == nil || value?.isEmpty == true {
                reply(Refusal(.invalidRequest, "`packs \(command.action.rawValue)` needs \(what)").result)
            }
            return value
        }
        switch command.action {
        case .list:
            if let app = command.app, store.registeredApp(app, orReply: reply) == nil { return }
            var problems: [String] = []
            for (app, error) in packs.checkErrors(app: command.app).sorted(by: { $0.key < $1.key }) {
                problems.append("\(app): \(error)")
            }
            var report = command.app.map(packs.languageReport) ?? PackReport(packs: packs.listing(app: nil))
            report.problems = problems
            report.overrides = packOverrides(app: command.app)
            reply(.packs(report))
        case .ensure:
            guard let app = need(command.app, "an app"), let pack = need(command.pack, "a pack id") else { return }
            packs.ensure(app: app, pack: pack, requireLatest: command.requireLatest ?? false, reply: reply)
        case .remove:
            guard let app = need(command.app, "an app"), let pack = need(command.pack, "a pack id") else { return }
            reply(packs.remove(app: app, pack: pack))
        case .follow:
            guard let name = need(command.app, "an app") else { return }
            delivery.followPacks(session, app: name)
            // An app's first use of AssetPackManager opts it into managed packs (Apple's rule).
            guard client.role == .app, !packs.hasPacks(name), let app = try? store.app(name), app.manifestURL != nil
            else {
                reply(.packs(PackReport(packs: packs.listing(app: name))))
                return
            }
            // Its signing key, if it names one, from the Info.plist (read off the executor).
            installer.loadBundle(app.appDirectory) { [self] loaded in
                // Not readable: no opt-in (fail closed: an unreadable key is never "no key").
                let bundle: AppBundle
                switch loaded {
                case .success(let read): bundle = read
                case .failure(let error):
                    executor.async { [self] in
                        reply(
                            .packs(
                                PackReport(
                                    packs: packs.listing(app: name),
                                    problems: ["cannot read the app's Info.plist to opt it into asset packs: \(error)"])
                            ))
                    }
                    return
                }
                packs.optIn(app, publicKey: bundle.assetPackPublicKey) { [self] failure in
                    executor.async { [self] in
                        reply(
                            .packs(
                                PackReport(
                                    packs: packs.listing(app: name), problems: failure.map { [$0.message] } ?? [])))
                    }
                }
            }
        case .override:
            overridePacks(command, reply: reply)
        case .setLanguage:
            guard let app = need(command.app, "an app") else { return }
            reply(packs.setLanguage(app: app, language: command.language))
        case .reconcileLanguages:
            guard let app = need(command.app, "an app") else { return }
            packs.reconcileLanguages(app: app, preferred: command.preferredLanguages, reply: reply)
        case .cancel:
            guard let app = need(command.app, "an app"), let pack = need(command.pack, "a pack id") else { return }
            reply(packs.cancel(app: app, pack: pack))
        case .verify:
            guard let app = need(command.app, "an app") else { return }
            packs.verify(app: app, repair: command.repair ?? false, reply: reply)
        case .check:
            guard let name = need(command.app, "an app") else { return }
            guard let app = store.registeredApp(name, orReply: reply) else { return }
            guard packs.hasPacks(name) else {
                reply(
                    Refusal(.invalidRequest, "\(name) is not registered with asset packs (BAHasManagedAssetPacks)")
                        .result)
                return
            }
            packs.check(app, trigger: .periodic) { [self] failure in
                executor.async { [self] in
                    if let failure {
                        reply(Refusal(failure.code, failure.message).result)
                    } else {
                        reply(.packs(PackReport(packs: packs.listing(app: name))))
                    }
                }
            }
        }
    }
}
