import BACore
import BAExtensionHost
import BAStore

// The pack service's question to the app's extension: which of an install's or update's packs
// to download (`ManagedDownloaderExtension.shouldDownload(_:)`).
extension BasdServices {
    /// Asks in the app's extension slot (no other call of the app's extension runs meanwhile),
    /// under the call gates, deadline, memory cap and sandbox of every call, outside the daily
    /// runtime allowance as an install's content request is. A call that cannot be made, or that
    /// does not end `ok`, declines nothing: every pack downloads, the system default; the run is
    /// recorded (`extension_run`, event `shouldDownload`) and counts toward quarantine as any.
    func packs(
        _ service: PackService, askExtensionOf app: StoredApp, about packs: [AssetPackRecord],
        decided: @escaping (_ declined: Set<String>) -> Void
    ) {
        let name = app.bundleIdentifier
        guard let libraryPath = app.extensionPath else { return decided([]) }
        // Part of an install or update (the only triggers that ask): in Low Power Mode too.
        if let reason = scheduler.refusalToCall(app, kind: .install, bypassAllowance: true) {
            log("\(name): not asking its extension which asset packs to download (\(reason)): all of them download")
            return decided([])
        }
        delivery.requestExtension(for: name, what: "shouldDownload") { [self] callID in
            extensions.call(
                app, libraryPath: libraryPath, event: .shouldDownload(packs), moreEvents: [], kind: .shouldDownload,
                bypassAllowance: true, cleanup: nil, callsEnded: nil, countsTowardQuarantine: nil
            ) { [self] outcome in
                delivery.contentCallEnded(callID, app: name)
                guard case .ran(let result) = outcome, result.verdict == .ok, let answers = result.shouldDownload,
                    answers.count == packs.count
                else {
                    log(
                        "\(name): shouldDownload ended \(outcome.verdictName)\(outcome.detail.map { " (\($0))" } ?? ""): every asset pack downloads"
                    )
                    return decided([])
                }
                decided(Set(zip(packs, answers).filter { !$0.1 }.map(\.0.id)))
            }
        }
    }
}
