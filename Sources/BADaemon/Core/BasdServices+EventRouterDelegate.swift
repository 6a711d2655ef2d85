import BADaemonProtocol
import BAStore

// The event router's question: the scheduler keeps the gates of extension calls.
extension BasdServices: EventRouterDelegate {
    func delivery(_ delivery: EventRouter, refusalToWake app: StoredApp) -> String? {
        scheduler.refusalToCall(app, kind: nil, bypassAllowance: false)
    }
}

// The pack service's events go to the CLI observers.
extension BasdServices: PackServiceDelegate {
    func packs(_ service: PackService, sent event: PackEvent) {
        delivery.sendPackEvent(event)
        launcher?.packEvent(
            event, isEssential: service.isEssentialJob(app: event.appIdentifier, pack: event.assetPackID))
    }
}
