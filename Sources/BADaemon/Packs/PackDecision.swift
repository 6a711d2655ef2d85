import BAPacks

/// What basd does with one pack when something happens: Apple's policies, as a rule without I/O
/// (table-tested in `PackDecisionTests`).
///
/// - **First installation / subsequent update**: an `essential` pack whose events include the
///   event is downloaded before the install returns; a `prefetch` one starts and goes on in the
///   background; an `onDemand` one waits for a request. A local pack the server has another
///   version of is updated in the background whatever its policy.
/// - **Periodic**: local (or requested) packs with another server version are updated in the
///   background; an essential or prefetch pack of the first installation that is still not local
///   (its download failed) is tried again.
/// - **Ensure** (a request): a pack that is not local is downloaded at once; with
///   `requireLatest`, a local one the server has another version of too.
/// - A local pack the manifest no longer lists is **obsolete**: removed once nothing holds it.
/// - A pack the app's extension **declined** (`shouldDownload(_:)`, asked before an install's or
///   update's essential and prefetch packs) is not downloaded by that event, nor retried by a
///   periodic check while it is not local; a request (ensure) downloads it all the same.
/// - A **parked** pack (its job was in flight at three abnormal exits of basd in a row) is left
///   alone by everything but a request (ensure), which tries again.
enum PackDecision {
    enum Trigger: Sendable, Hashable {
        case installation(PackManifest.InstallationEvent)
        case periodic
        case ensure(requireLatest: Bool)
    }

    enum Action: Sendable, Hashable {
        case none
        /// Download the server's version; `essential` goes first and an install waits for it.
        case download(essential: Bool)
        /// The manifest no longer lists it: remove the local version once nothing holds it.
        case removeObsolete
        /// Not listed, nothing local: forget the row.
        case forget
    }

    static func action(
        policy: PackManifest.DownloadPolicy?, serverVersion: Int?, localVersion: Int?, requested: Bool,
        trigger: Trigger, declined: Bool = false, parked: Bool = false
    ) -> Action {
        guard let policy, let serverVersion else {
            return localVersion == nil ? .forget : .removeObsolete
        }
        if parked, case .installation = trigger { return .none }
        if parked, trigger == .periodic { return .none }
        let current = localVersion == serverVersion
        let outdated = localVersion != nil && !current
        switch trigger {
        case .installation(let event):
            switch policy {
            case .essential(let events) where events.contains(event):
                return current || declined ? .none : .download(essential: true)
            case .prefetch(let events) where events.contains(event):
                return current || declined ? .none : .download(essential: false)
            default:
                return outdated ? .download(essential: false) : .none
            }
        case .periodic:
            if outdated { return .download(essential: false) }
            guard localVersion == nil else { return .none }
            switch policy {
            case .essential(let events), .prefetch(let events):
                return (events.contains(.firstInstallation) && !declined) || requested
                    ? .download(essential: false) : .none
            case .onDemand:
                return requested ? .download(essential: false) : .none
            }
        case .ensure(let requireLatest):
            if localVersion == nil { return .download(essential: true) }
            return requireLatest && outdated ? .download(essential: true) : .none
        }
    }
}
