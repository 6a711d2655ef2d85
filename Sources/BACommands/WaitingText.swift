import Foundation

/// What a waiting download or pack waits for, as `ba downloads` and `ba packs` say it in text
/// (the JSON gives the `waitingFor` name itself).
///
/// `queue` is its place in line (`queued, 3rd in line`); NetworkManager's connectivity is
/// `waiting for the network: offline` (or `captivePortal`, `limitedConnectivity`); the others
/// are `waiting for space`, `retry`, `lowPowerMode` or `meteredNetwork`.
enum WaitingText {
    /// The text for `waitingFor`, with `queuePosition` when it is `queue`.
    static func text(_ waitingFor: String, queuePosition: Int? = nil) -> String {
        switch waitingFor {
        case "queue": queuePosition.map { "queued, \(ordinal($0)) in line" } ?? "queued"
        case "offline", "captivePortal", "limitedConnectivity": "waiting for the network: \(waitingFor)"
        default: "waiting for \(waitingFor)"
        }
    }

    /// The text for `waitingFor`, and for `server` the error and when basd tries it next
    /// (`waiting for the server (http://…: Couldn't connect to server); next try in 2 s`).
    static func text(_ waitingFor: String, error: String?, nextAttemptAt: Double?) -> String {
        guard waitingFor == "server" else { return text(waitingFor) }
        var text = "waiting for the server"
        if let error { text += " (\(error))" }
        if let next = nextAttemptAt {
            let seconds = max(0, Int((next - Date().timeIntervalSince1970).rounded(.up)))
            text += "; next try in \(seconds) s"
        }
        return text
    }

    /// `1st`, `2nd`, `3rd`, `4th`, … `11th`, `12th`, `13th`, … `21st`.
    static func ordinal(_ number: Int) -> String {
        let suffix =
            switch (number % 10, number % 100) {
            case (_, 11...13): "th"
            case (1, _): "st"
            case (2, _): "nd"
            case (3, _): "rd"
            default: "th"
            }
        return "\(number)\(suffix)"
    }
}
