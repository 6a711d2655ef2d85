import ArgumentParser
import BADaemonProtocol
internal import CBASystem
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `ba events --follow`: every app's download events as basd reports them.
struct Events: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Follow every app's download events as they happen, one line each.",
        discussion: """
            basd streams events as they happen and keeps no history for the command line, so --follow is \
            required: ba prints each event until SIGINT (Ctrl-C) or SIGTERM (exit 0). When basd goes away \
            (a restart), ba says so on stderr and waits for it to come back, then follows again (events in \
            between are not shown); with --no-reconnect it exits 31 instead. Once subscribed it says so on \
            stderr ("following events from basd at PATH"); stdout holds only events. Progress events (sequence 0) are transient: not stored, never redelivered. \
            An event the app's extension failed on too often is parked (it waits for the app's next connection, and \
            the extension goes on with the app's later events): it is shown again then, ending "PARKED: why" \
            (`parked` in --json).

            Examples:
              ba events --follow
              ba events --follow --app com.example.game --json --no-progress
            """)

    @OptionGroup var daemon: DaemonOptions

    @Flag(help: "Print events as they happen until interrupted (required).")
    var follow = false

    @Option(help: "Only this app's events (its bundle identifier).")
    var app: String?

    @Flag(help: "One JSON object per line: the event's fields and `time`.")
    var json = false

    @Flag(name: .customLong("no-progress"), help: "Leave out the transient progress events.")
    var noProgress = false

    func validate() throws {
        guard follow else {
            throw ValidationError(
                "ba events needs --follow: basd streams events as they happen and keeps no history for the "
                    + "command line (stop following with Ctrl-C)")
        }
    }

    @Flag(
        name: .customLong("no-reconnect"),
        help: "Exit 31 when basd goes away instead of waiting for it to come back.")
    var noReconnect = false

    func run() throws {
        let printer = EventPrinter(json: json, app: app, includesProgress: !noProgress)
        let state = FollowState()
        // A handler in place before anything else, not a dispatch source: a source's handler is
        // installed later on another thread, and until then a signal would kill ba (or, with
        // SIG_IGN set, be lost) where a script expects exit 0.
        let signals = [SIGINT, SIGTERM]
        let signalPipe = ba_sys_signal_pipe(signals, Int32(signals.count))
        guard signalPipe >= 0 else {
            printError("cannot handle SIGINT and SIGTERM: \(String(cString: strerror(errno)))")
            throw ExitCode(BAExitCode.hostFailure.rawValue)
        }
        Thread {
            var byte: UInt8 = 0
            while read(signalPipe, &byte, 1) < 0 && errno == EINTR {}
            state.interrupt()
        }.start()

        var connected = false
        while true {
            let session: DaemonSession
            do {
                session = try daemon.tryConnect(
                    onEvent: { printer.write($0) }, onPackEvent: { printer.write($0) }, onClose: { state.lost($0) })
                let result = try session.client.call(.subscribeEvents)
                guard case .ok = result else { throw session.unexpected(result, to: .subscribeEvents) }
            } catch let error as DaemonClientError {
                // The first connection must work (exit 30 says basd is not there); later ones are
                // retried until basd is back or ba is interrupted.
                guard connected else { throw DaemonSession.unavailable(error) }
                if state.interrupted(within: .milliseconds(250)) { return }
                continue
            }
            FileHandle.standardError.write(
                Data(
                    (connected
                        ? "basd is back at \(session.socketPath); following its events again\n"
                        : "following events from basd at \(session.socketPath) (Ctrl-C to stop)\n").utf8))
            connected = true
            switch state.waitForEnd() {
            case .interrupted:
                session.client.close()
                return
            case .lost(let error):
                guard !noReconnect else {
                    printError("stopped following: \(error.message) (basd at \(session.socketPath) stopped?)")
                    throw ExitCode(BAExitCode.daemonConnectionLost.rawValue)
                }
                printError(
                    "lost basd at \(session.socketPath) (\(error.message)); waiting for it to come back "
                        + "(events in between are not shown; Ctrl-C to stop)")
            }
        }
    }

    /// Why following a connection ended: a signal (for good) or the connection's end (per connection).
    final class FollowState: @unchecked Sendable {
        enum End {
            case interrupted
            case lost(DaemonClientError)
        }

        private let lock = NSLock()
        private var isInterrupted = false
        private var lostError: DaemonClientError?
        private let changed = DispatchSemaphore(value: 0)

        func interrupt() {
            lock.withLock { isInterrupted = true }
            changed.signal()
        }

        func lost(_ error: DaemonClientError) {
            lock.withLock { lostError = error }
            changed.signal()
        }

        /// Blocks until ba is interrupted or the current connection is lost.
        func waitForEnd() -> End {
            while true {
                let end: End? = lock.withLock {
                    if isInterrupted { return .interrupted }
                    defer { lostError = nil }
                    return lostError.map { .lost($0) }
                }
                if let end { return end }
                changed.wait()
            }
        }

        /// Waits up to `duration`; true when ba was interrupted.
        func interrupted(within duration: Duration) -> Bool {
            let milliseconds = Int(
                duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
            _ = changed.wait(timeout: .now() + .milliseconds(milliseconds))
            return lock.withLock {
                lostError = nil
                return isInterrupted
            }
        }
    }
}

/// Writes one line per event on stdout, unbuffered, so a pipe sees each line as it happens.
///
/// Called only on the ``DaemonClient``'s reader thread, one event at a time: the formatters are
/// never shared between threads.
final class EventPrinter: @unchecked Sendable {
    let json: Bool
    let app: String?
    let includesProgress: Bool
    private let clock: DateFormatter
    private let timestamp = ISO8601DateFormatter()
    private let encoder = JSONEncoder()

    init(json: Bool, app: String?, includesProgress: Bool) {
        self.json = json
        self.app = app
        self.includesProgress = includesProgress
        clock = DateFormatter()
        clock.dateFormat = "HH:mm:ss.SSS"
        timestamp.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    }

    func write(_ event: DownloadEvent) {
        if let app, event.appIdentifier != app { return }
        if !includesProgress && event.kind == .progress { return }
        let now = Date()
        let line = json ? jsonLine(event, time: now) : humanLine(event, time: now)
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// An asset pack's event: `TIME  APP  pack ID  KIND  DETAILS`; in JSON its fields under
    /// `pack` (so a download event's reader can tell them apart) and `time`.
    func write(_ event: PackEvent) {
        if let app, event.appIdentifier != app { return }
        if !includesProgress && event.kind == .progress { return }
        let now = Date()
        let line: String
        if json {
            line = jsonObjectLine(["pack": event], time: now)
        } else {
            var details: [String] = []
            if let version = event.version { details.append("version \(version)") }
            if let present = event.bytesPresent, let total = event.bytesTotal, total > 0 {
                let percent = Int((Double(present) / Double(total) * 100).rounded(.down))
                details.append("\(HumanReadable.bytes(present)) / \(HumanReadable.bytes(total)) (\(percent)%)")
            }
            if let fetched = event.bytesFetched, event.kind == .finished {
                details.append("fetched \(HumanReadable.bytes(fetched))")
                if let reused = event.bytesReused, reused > 0 {
                    details.append("reused \(HumanReadable.bytes(reused))")
                }
            }
            if let failure = event.failure {
                details.append(failure.message + (failure.code.map { " (error \($0))" } ?? ""))
            }
            if let reason = event.waitingFor {
                details.append(
                    WaitingText.text(reason.rawValue, error: event.waitingError, nextAttemptAt: event.nextAttemptAt))
            }
            line = [
                clock.string(from: now), event.appIdentifier, "pack \(event.assetPackID)", event.kind.name,
                details.joined(separator: ", "),
            ].filter { !$0.isEmpty }.joined(separator: "  ")
        }
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// The event's fields (as basd sent them) and `time`, the moment ba received it.
    func jsonLine(_ event: DownloadEvent, time: Date) -> String { jsonObjectLine(event, time: time) }

    private func jsonObjectLine(_ event: some Encodable, time: Date) -> String {
        guard let data = try? encoder.encode(event),
            var object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        else { return "{}" }
        object["time"] = timestamp.string(from: time)
        guard
            let line = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return "{}" }
        return String(decoding: line, as: UTF8.self)
    }

    /// `TIME  APP  IDENTIFIER  KIND  DETAILS`, and `PARKED: WHY` for an event basd parked.
    func humanLine(_ event: DownloadEvent, time: Date) -> String {
        [
            clock.string(from: time), event.appIdentifier ?? "-", event.identifier, event.kind.rawValue,
            details(event), event.parked.map { "PARKED: \($0)" } ?? "",
        ]
        .filter { !$0.isEmpty }.joined(separator: "  ")
    }

    func details(_ event: DownloadEvent) -> String {
        switch event.kind {
        case .began:
            let mode = event.isForeground.map { $0 ? "foreground" : "background" }
            let offset = event.offset.map { $0 > 0 ? "resumed at \(HumanReadable.bytes($0))" : "from the start" }
            return [offset, mode].compactMap { $0 }.joined(separator: ", ")
        case .paused:
            return event.bytesOnDisk.map { "\(HumanReadable.bytes($0)) kept" } ?? ""
        case .progress:
            // A stored progress event carries what is on disk; a transient one what was written.
            let written = event.bytesWritten ?? event.bytesOnDisk ?? 0
            guard let total = event.totalBytes ?? event.download?.fileSize, total > 0 else {
                return "\(HumanReadable.bytes(written))"
            }
            let percent = Int((Double(written) / Double(total) * 100).rounded(.down))
            return "\(HumanReadable.bytes(written)) / \(HumanReadable.bytes(total)) (\(percent)%)"
        case .finished:
            let size = event.size.map(HumanReadable.bytes)
            let place = event.destination.map { "at \($0)" }
            return [size, place].compactMap { $0 }.joined(separator: " ")
        case .failed:
            let code = event.errorCode.map { "error \($0)" }
            let domain = event.errorDomain.map { "(\($0))" }
            let message = event.errorMessage.map { ": \($0)" } ?? ""
            return [code, domain].compactMap { $0 }.joined(separator: " ") + message
        case .needsCredentials:
            return event.challenge.map { "challenge: \($0)" } ?? ""
        case .waiting:
            // "attempt 3 failed: http://…: Couldn't connect to server; next attempt at 18:02:11.250"
            let attempt = event.attempt.map { "attempt \($0) failed" } ?? "waiting"
            let reason = event.reason.map { ": \($0)" } ?? ""
            let next =
                event.retryAt.map {
                    "; next attempt at \(clock.string(from: Date(timeIntervalSince1970: Double($0) / 1000)))"
                } ?? ""
            return attempt + reason + next
        }
    }
}
