import BADesktopBus
import Foundation
import Synchronization

/// The machine's sleep, through logind (`org.freedesktop.login1` on the system bus): basd holds a
/// `delay` sleep inhibitor while awake; on `PrepareForSleep(true)` it checkpoints its transfers
/// (each stops keeping its bytes, its partial file synced and validator saved) and then releases
/// the inhibitor, so the machine sleeps with nothing half-written; on `PrepareForSleep(false)` it
/// takes a new inhibitor and the transfers go on at once (waits to retry end: their sockets are
/// dead and the network may have changed), instead of waiting out timeouts on dead connections.
///
/// Without logind on the bus, one log line and nothing else (transfers recover by their timeouts,
/// as before); a logind that comes onto the bus later (or restarts) is given a new inhibitor at
/// once. logind waits at most its `InhibitDelayMaxSec` (5 s by default) for the release.
final class SleepInhibitor: Sendable {
    private let bus: DesktopBus
    private let log: @Sendable (String) -> Void
    /// Checkpoints the transfers (`true`) and calls its completion when they are, or lets them go on (`false`).
    private let prepare: @Sendable (_ sleeping: Bool, _ checkpointed: @escaping @Sendable () -> Void) -> Void
    /// The inhibitor's descriptor while held.
    private let inhibitor = Mutex<Int32?>(nil)
    /// Whether the inhibitor could not be taken (logged once).
    private let toldUnavailable = Mutex(false)

    static let manager = "org.freedesktop.login1.Manager"
    static let name = "org.freedesktop.login1"

    init(
        bus: DesktopBus, log: @escaping @Sendable (String) -> Void,
        prepare: @escaping @Sendable (_ sleeping: Bool, _ checkpointed: @escaping @Sendable () -> Void) -> Void
    ) {
        self.bus = bus
        self.log = log
        self.prepare = prepare
    }

    /// Follows `PrepareForSleep` and takes the inhibitor.
    func start() {
        bus.subscribe(
            "type='signal',interface='\(Self.manager)',member='PrepareForSleep',path='/org/freedesktop/login1'"
        ) { [self] message in
            guard let sleeping = message.bool(0) else { return }
            if sleeping {
                log("sleep: the machine is about to sleep; checkpointing transfers")
                prepare(true) { [self] in
                    log("sleep: transfers checkpointed; the machine may sleep")
                    release()
                }
            } else {
                log("sleep: the machine woke; transfers go on")
                take()
                prepare(false) {}
            }
        }
        // logind coming onto the bus (after basd, or restarted): the old inhibitor went with the old
        // logind; take one from the new. Leaving it: let go of the one held.
        bus.subscribe(
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
                + "member='NameOwnerChanged',arg0='\(Self.name)'"
        ) { [self] message in
            guard message.string(0) == Self.name, let owner = message.string(2) else { return }
            if owner.isEmpty {
                log("desktop: logind left the system bus; no sleep inhibitor until it is back")
                release()
            } else {
                log("desktop: logind is on the system bus (\(owner)); taking a sleep inhibitor")
                toldUnavailable.withLock { $0 = false }
                take()
            }
        }
        // The system bus came back (its daemon restarted): ask again (logind's inhibitor lives with
        // its descriptor, but a logind restarted meanwhile would not know it).
        bus.onReconnect { [self] in take() }
        take()
    }

    /// Releases the inhibitor (at shutdown too).
    func release() {
        if let fd = inhibitor.withLock({ $0.take() }) { close(fd) }
    }

    /// Takes a `delay` inhibitor for sleep (logind's `Inhibit`), unless one is held.
    private func take() {
        bus.call(
            destination: Self.name, path: "/org/freedesktop/login1", interface: Self.manager,
            member: "Inhibit",
            arguments: [
                .value(.string("sleep")), .value(.string("basd")),
                .value(.string("Checkpointing background downloads before sleep")), .value(.string("delay")),
            ]
        ) { [self] reply in
            switch reply {
            case .success(let reply):
                guard case .fileDescriptor(let fd)? = reply.arguments.first, fd >= 0 else {
                    return unavailable("logind's Inhibit answered without a descriptor")
                }
                let previous = inhibitor.withLock { held in
                    defer { held = fd }
                    return held
                }
                if let previous { close(previous) }
            case .failure(let error):
                unavailable("\(error)")
            }
        }
    }

    private func unavailable(_ why: String) {
        guard
            !toldUnavailable.withLock({ told in
                defer { told = true }
                return told
            })
        else { return }
        log("desktop: no sleep inhibitor (\(why)): transfers are not checkpointed before the machine sleeps")
    }
}
