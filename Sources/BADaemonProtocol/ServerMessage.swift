import BACore

/// A message from basd to a client: a response to one request, or a pushed event.
///
/// On the wire: `{"type": "response", "id": 1, "result": {"type": "ok"}}` or
/// `{"type": "event", "event": {…}}` (see `docs/protocol.md`).
package enum ServerMessage: Sendable, Hashable, Codable {
    /// The answer to the request with id `requestId`. A reply to input too broken to have an id
    /// (a bad frame, bad JSON) carries id 0.
    case response(requestId: UInt64, result: Result)
    /// A part of the answer to the request with id `requestId`; more parts follow, the last one a
    /// ``response(requestId:result:)``. On the wire: a `response` with `"more": true`. See
    /// ``Result/parts(itemsPerPart:)``.
    case partialResponse(requestId: UInt64, result: Result)
    /// Something happened to one of the client's downloads. Sent only after the handshake, in
    /// `sequence` order; delivery is at least once until acknowledged with
    /// ``Request/acknowledgeEvents(throughSequence:)``.
    case event(DownloadEvent)
    /// Something that happened to an asset pack, sent to CLI observers (`ba events --follow`).
    case packEvent(PackEvent)

    /// What a request produced.
    package enum Result: Sendable, Hashable, Codable {
        /// Done.
        case ok
        /// The answer to `hello`.
        case welcome(WelcomeInfo)
        /// The answer to `lockStatus`.
        case lock(LockInfo)
        /// The answer to `status`.
        case status(StatusInfo)
        /// The answer to `currentDownloads`.
        case downloads([DownloadInfo])
        /// The request failed; `code` is a ``DaemonErrorCode`` raw value (an Int, so a client can
        /// show a code it does not know yet).
        case error(code: Int, message: String)
        /// The outcome of `installApp` or `simulate`.
        case extensionRun(ExtensionRunReport)
        /// The registered apps (`listApps`).
        case apps([AppInfo])
        /// A purge plan, or what was purged (`purge`).
        case purge(PurgeReport)
        /// What `uninstallApp` did.
        case uninstalled(UninstallReport)
        /// The answer to `listDownloads` with a `limit`: the downloads shown and how many more matched.
        case downloadList(DownloadListing)
        /// The answer to `packs`.
        case packs(PackReport)

        private enum CodingKeys: String, CodingKey {
            case type, status, downloads, code, message, welcome, lock, report, apps, purge, uninstall, downloadList,
                packs
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let type = try container.decode(String.self, forKey: .type)
            switch type {
            case "ok": self = .ok
            case "welcome": self = .welcome(try container.decode(WelcomeInfo.self, forKey: .welcome))
            case "lock": self = .lock(try container.decode(LockInfo.self, forKey: .lock))
            case "status": self = .status(try container.decode(StatusInfo.self, forKey: .status))
            case "downloads": self = .downloads(try container.decode([DownloadInfo].self, forKey: .downloads))
            case "extensionRun": self = .extensionRun(try container.decode(ExtensionRunReport.self, forKey: .report))
            case "apps": self = .apps(try container.decode([AppInfo].self, forKey: .apps))
            case "purge": self = .purge(try container.decode(PurgeReport.self, forKey: .purge))
            case "uninstalled": self = .uninstalled(try container.decode(UninstallReport.self, forKey: .uninstall))
            case "packs": self = .packs(try container.decode(PackReport.self, forKey: .packs))
            case "downloadList":
                self = .downloadList(try container.decode(DownloadListing.self, forKey: .downloadList))
            case "error":
                self = .error(
                    code: try container.decode(Int.self, forKey: .code),
                    message: try container.decode(String.self, forKey: .message))
            default: throw UnknownMessageType(type: type, id: nil)
            }
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case .ok: try container.encode("ok", forKey: .type)
            case .welcome(let welcome):
                try container.encode("welcome", forKey: .type)
                try container.encode(welcome, forKey: .welcome)
            case .lock(let lock):
                try container.encode("lock", forKey: .type)
                try container.encode(lock, forKey: .lock)
            case .status(let status):
                try container.encode("status", forKey: .type)
                try container.encode(status, forKey: .status)
            case .downloads(let downloads):
                try container.encode("downloads", forKey: .type)
                try container.encode(downloads, forKey: .downloads)
            case .extensionRun(let report):
                try container.encode("extensionRun", forKey: .type)
                try container.encode(report, forKey: .report)
            case .apps(let apps):
                try container.encode("apps", forKey: .type)
                try container.encode(apps, forKey: .apps)
            case .purge(let report):
                try container.encode("purge", forKey: .type)
                try container.encode(report, forKey: .purge)
            case .uninstalled(let report):
                try container.encode("uninstalled", forKey: .type)
                try container.encode(report, forKey: .uninstall)
            case .downloadList(let listing):
                try container.encode("downloadList", forKey: .type)
                try container.encode(listing, forKey: .downloadList)
            case .packs(let report):
                try container.encode("packs", forKey: .type)
                try container.encode(report, forKey: .packs)
            case .error(let code, let message):
                try container.encode("error", forKey: .type)
                try container.encode(code, forKey: .code)
                try container.encode(message, forKey: .message)
            }
        }
    }

    private enum CodingKeys: String, CodingKey { case type, id, result, event, more, packEvent }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "response":
            let id = try container.decode(UInt64.self, forKey: .id)
            let result = try container.decode(Result.self, forKey: .result)
            let more = try container.decodeIfPresent(Bool.self, forKey: .more) ?? false
            self = more ? .partialResponse(requestId: id, result: result) : .response(requestId: id, result: result)
        case "event": self = .event(try container.decode(DownloadEvent.self, forKey: .event))
        case "packEvent": self = .packEvent(try container.decode(PackEvent.self, forKey: .packEvent))
        default: throw UnknownMessageType(type: type, id: nil)
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .response(let id, let result):
            try container.encode("response", forKey: .type)
            try container.encode(id, forKey: .id)
            try container.encode(result, forKey: .result)
        case .partialResponse(let id, let result):
            try container.encode("response", forKey: .type)
            try container.encode(id, forKey: .id)
            try container.encode(result, forKey: .result)
            try container.encode(true, forKey: .more)
        case .event(let event):
            try container.encode("event", forKey: .type)
            try container.encode(event, forKey: .event)
        case .packEvent(let event):
            try container.encode("packEvent", forKey: .type)
            try container.encode(event, forKey: .packEvent)
        }
    }
}

/// basd's answer to `status`.
package struct StatusInfo: Sendable, Hashable, Codable {
    /// The protocol version of this connection.
    package var protocolVersion: Int
    /// basd's version string.
    package var daemonVersion: String
    /// basd's process id.
    package var pid: Int32
    /// Seconds since basd started listening.
    package var uptimeSeconds: Double
    /// Open client connections, this one included.
    package var connections: Int
    /// Registered apps, from basd's store.
    package var registeredApps: Int
    /// Active (created, waiting or downloading) downloads, from basd's store.
    package var activeDownloads: Int

    /// Creates status info.
    package init(
        protocolVersion: Int, daemonVersion: String, pid: Int32, uptimeSeconds: Double, connections: Int,
        registeredApps: Int, activeDownloads: Int
    ) {
        self.protocolVersion = protocolVersion
        self.daemonVersion = daemonVersion
        self.pid = pid
        self.uptimeSeconds = uptimeSeconds
        self.connections = connections
        self.registeredApps = registeredApps
        self.activeDownloads = activeDownloads
    }
}

/// A download as basd reports it (`currentDownloads`): what the client sent plus where it stands.
package struct DownloadInfo: Sendable, Hashable, Codable {
    /// `BADownload.uniqueIdentifier`.
    package var uniqueIdentifier: String
    /// What the client scheduled.
    package var download: DownloadDescription
    /// `BADownload.State` raw value: failed -1, created 0, waiting 1, downloading 2, finished 3.
    package var state: DownloadState
    /// Whether it runs in the foreground.
    package var isForeground: Bool
    /// Bytes on disk so far.
    package var bytesOnDisk: Int64
    /// The app it belongs to (set in answers to the CLI's `listDownloads`).
    package var appIdentifier: String?
    /// Transfer attempts so far.
    package var attempts: Int?
    /// Why it failed (state failed): the error's code and message.
    package var errorCode: Int?
    package var errorMessage: String?
    /// What an active download waits for before its transfer can go on, if anything: `"space"`
    /// (the file system is full; it resumes by itself when there is room), `"retry"` (an attempt
    /// failed, or the host could not be reached; ``errorMessage`` says why and ``nextAttemptAt``
    /// when it tries again), `"server"` (its server gave no answer: it goes on at the server's
    /// first answer, which basd tries one request at a time; ``errorMessage`` and
    /// ``nextAttemptAt`` as for `"retry"`), `"lowPowerMode"` (a background download while the power profile
    /// saves power), `"meteredNetwork"` (the network is metered, and the request disallows it or
    /// the download is a background one), `"offline"`, `"captivePortal"` or `"limitedConnectivity"`
    /// (a background download while NetworkManager's connectivity is none, a captive portal or
    /// limited), `"queue"` (a background download behind the background concurrency limit;
    /// ``queuePosition`` says its place).
    package var waitingFor: String?
    /// With `waitingFor` `"queue"`: the download's place in the queue, 1 for the next to start
    /// (the order basd starts them in: essential first, then higher priority, then earlier
    /// scheduled). Nil otherwise, and when the place is not known (a single download's answer).
    package var queuePosition: Int?
    /// When a download waiting for a retry tries again (seconds since 1970).
    package var nextAttemptAt: Double?
    /// Why an event of this download is parked, if one is: the app's extension failed on it too
    /// often, so it waits for the app's next connection (the extension goes on with the app's
    /// later events). Nil when none is.
    package var parkedEvent: String?

    /// Creates download info.
    package init(
        uniqueIdentifier: String, download: DownloadDescription, state: DownloadState, isForeground: Bool,
        bytesOnDisk: Int64,
        appIdentifier: String? = nil, attempts: Int? = nil, errorCode: Int? = nil, errorMessage: String? = nil
    ) {
        self.uniqueIdentifier = uniqueIdentifier
        self.download = download
        self.state = state
        self.isForeground = isForeground
        self.bytesOnDisk = bytesOnDisk
        self.appIdentifier = appIdentifier
        self.attempts = attempts
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }
}

/// One entry of the app's event log, pushed to the client: the store's ``DownloadChange`` with
/// the download it is about.
///
/// Its JSON is flat: the event's own fields, `kind` and the change's fields beside them (a
/// failure's as `errorDomain`, `errorCode` and `errorMessage`, the names of protocol version 1).
package struct DownloadEvent: Sendable, Hashable, Codable {
    /// What happened.
    package typealias Kind = DownloadChange.Kind

    /// The event's place in the log: increasing per app; acknowledge through it. 0 marks a
    /// transient event that is not in the log (progress between two durable records): never
    /// acknowledged, never redelivered.
    package var sequence: Int64
    /// The app the event is for (set for the CLI's event stream).
    package var appIdentifier: String?
    /// The download as scheduled (set for apps, so the client can hand the delegate a download).
    package var download: DownloadDescription?
    /// The download's `uniqueIdentifier`.
    package var downloadUniqueIdentifier: String
    /// The download's `identifier`.
    package var identifier: String
    /// What happened.
    package var change: DownloadChange
    /// Set when the event is parked: why the app's extension is no longer handed it (it failed
    /// on it too often). The event waits for the app's next connection. basd sends a parked
    /// event again to `ba events --follow` with this set, at the moment it parks it.
    package var parked: String?

    /// Creates an event.
    package init(
        sequence: Int64, downloadUniqueIdentifier: String, identifier: String, change: DownloadChange,
        appIdentifier: String? = nil, download: DownloadDescription? = nil, parked: String? = nil
    ) {
        self.sequence = sequence
        self.downloadUniqueIdentifier = downloadUniqueIdentifier
        self.identifier = identifier
        self.change = change
        self.appIdentifier = appIdentifier
        self.download = download
        self.parked = parked
    }

    /// What happened, by name.
    package var kind: Kind { change.kind }

    private enum CodingKeys: String, CodingKey {
        case sequence, appIdentifier, download, downloadUniqueIdentifier, identifier, kind, parked
        case errorDomain, errorCode, errorMessage
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        sequence = try container.decode(Int64.self, forKey: .sequence)
        appIdentifier = try container.decodeIfPresent(String.self, forKey: .appIdentifier)
        download = try container.decodeIfPresent(DownloadDescription.self, forKey: .download)
        downloadUniqueIdentifier = try container.decode(String.self, forKey: .downloadUniqueIdentifier)
        identifier = try container.decode(String.self, forKey: .identifier)
        parked = try container.decodeIfPresent(String.self, forKey: .parked)
        let kind = try container.decode(Kind.self, forKey: .kind)
        if kind == .failed {
            change = .failed(
                domain: try container.decode(String.self, forKey: .errorDomain),
                code: try container.decode(Int.self, forKey: .errorCode),
                message: try container.decode(String.self, forKey: .errorMessage))
        } else {
            change = try DownloadChange(kind: kind, from: decoder)
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sequence, forKey: .sequence)
        try container.encodeIfPresent(appIdentifier, forKey: .appIdentifier)
        try container.encodeIfPresent(download, forKey: .download)
        try container.encode(downloadUniqueIdentifier, forKey: .downloadUniqueIdentifier)
        try container.encode(identifier, forKey: .identifier)
        try container.encodeIfPresent(parked, forKey: .parked)
        if case .failed(let domain, let code, let message) = change {
            try container.encode(Kind.failed, forKey: .kind)
            try container.encode(domain, forKey: .errorDomain)
            try container.encode(code, forKey: .errorCode)
            try container.encode(message, forKey: .errorMessage)
        } else {
            try change.encode(to: encoder)
        }
    }
}

extension DownloadEvent {
    /// `began`: where the transfer resumed.
    package var offset: Int64? { if case .began(let offset, _) = change { offset } else { nil } }
    /// `began`: whether it runs in the foreground.
    package var isForeground: Bool? { if case .began(_, let foreground) = change { foreground } else { nil } }
    /// `paused`: bytes kept.
    package var bytesOnDisk: Int64? { if case .paused(let bytes) = change { bytes } else { nil } }
    /// `progress`: bytes written so far.
    package var bytesWritten: Int64? { if case .progress(let bytes, _) = change { bytes } else { nil } }
    /// `progress`: the expected total, when known.
    package var totalBytes: Int64? { if case .progress(_, let total) = change { total } else { nil } }
    /// `finished`: the file's path (in the app group container).
    package var destination: String? { if case .finished(let path, _) = change { path } else { nil } }
    /// `finished`: the file's size.
    package var size: Int64? { if case .finished(_, let size) = change { size } else { nil } }
    /// `failed`: the error's domain.
    package var errorDomain: String? { if case .failed(let domain, _, _) = change { domain } else { nil } }
    /// `failed`: the error's code.
    package var errorCode: Int? { if case .failed(_, let code, _) = change { code } else { nil } }
    /// `failed`: the error's message.
    package var errorMessage: String? { if case .failed(_, _, let message) = change { message } else { nil } }
    /// `needsCredentials`: the authentication challenge (e.g. the `WWW-Authenticate` value).
    package var challenge: String? { if case .needsCredentials(let challenge) = change { challenge } else { nil } }
    /// `waiting`: why the last attempt failed.
    package var reason: String? { if case .waiting(let reason, _, _) = change { reason } else { nil } }
    /// `waiting`: when the next attempt is due (Unix time, milliseconds).
    package var retryAt: Int64? { if case .waiting(_, let retryAt, _) = change { retryAt } else { nil } }
    /// `waiting`: the attempt that failed (from 1).
    package var attempt: Int? { if case .waiting(_, _, let attempt) = change { attempt } else { nil } }
}

/// basd's answer to `hello`.
package struct WelcomeInfo: Sendable, Hashable, Codable {
    /// The protocol version of this connection.
    package var protocolVersion: Int
    /// basd's version string.
    package var daemonVersion: String
    /// The app's bundle identifier (app and extension clients).
    package var bundleIdentifier: String?
    /// The app's `BAAppGroupID`.
    package var appGroupIdentifier: String?
    /// The app group container's path: finished files are delivered there, and its
    /// exclusive-control lock file lives there.
    package var appGroupContainer: String?
    /// Creates welcome info.
    package init(
        protocolVersion: Int, daemonVersion: String, bundleIdentifier: String? = nil,
        appGroupIdentifier: String? = nil, appGroupContainer: String? = nil
    ) {
        self.protocolVersion = protocolVersion
        self.daemonVersion = daemonVersion
        self.bundleIdentifier = bundleIdentifier
        self.appGroupIdentifier = appGroupIdentifier
        self.appGroupContainer = appGroupContainer
    }
}

/// The state of an app group's exclusive-control lock (`lockStatus`).
package struct LockInfo: Sendable, Hashable, Codable {
    /// The app asked about.
    package var appIdentifier: String
    /// Its app group.
    package var appGroupIdentifier: String
    /// The lock file.
    package var lockPath: String
    /// Whether a process holds the lock now.
    package var held: Bool
    /// The holder's pid as the kernel reports it (`/proc/locks`), when held and nameable.
    package var holderPID: Int32?
    /// Creates lock info.
    package init(appIdentifier: String, appGroupIdentifier: String, lockPath: String, held: Bool, holderPID: Int32?) {
        self.appIdentifier = appIdentifier
        self.appGroupIdentifier = appGroupIdentifier
        self.lockPath = lockPath
        self.held = held
        self.holderPID = holderPID
    }
}
