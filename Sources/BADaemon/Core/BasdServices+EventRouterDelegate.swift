import BAStore

// The event router's question: the scheduler keeps the gates of extension calls.
extension BasdServices: EventRouterDelegate {
    func delivery(_ delivery: EventRouter, refusalToWake app: StoredApp) -> String? {
        scheduler.refusalToCall(app, kind: nil, bypassAllowance: false)
    }
}
