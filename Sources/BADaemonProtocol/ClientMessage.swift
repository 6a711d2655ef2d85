import BACore

/// A request from a client to basd, with the id its response will carry.
///
/// On the wire it is one flat JSON object: `{"id": 1, "type": "status"}`, the request's fields
/// beside `id` and `type` (see `docs/protocol.md`).
package struct ClientMessage: Sendable, Hashable, Codable {
    /// Chosen by the client; basd copies it into the response. Unique per connection by convention.
    package var id: UInt64
    /// What the client asks for.
    package var request: Request

    /// Creates a message.
    package init(id: UInt64, request: Request) {
        self.id = id
        self.request = request
    }

    private enum CodingKeys: String, CodingKey {
        case id, type, protocolVersion, client, download, identifier, throughSequence, app, uniqueIdentifier,
            disposition, user, password, install, event, dryRun, keepData, states, limit, packs
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UInt64.self, forKey: .id)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "hello":
            request = .hello(
                protocolVersion: try container.decode(Int.self, forKey: .protocolVersion),
                client: try container.decode(ClientInfo.self, forKey: .client))
        case "status": request = .status
        case "schedule": request = .schedule(try container.decode(DownloadDescription.self, forKey: .download))
        case "startForeground":
            request = .startForeground(identifier: try container.decode(String.self, forKey: .identifier))
        case "cancel": request = .cancel(identifier: try container.decode(String.self, forKey: .identifier))
        case "currentDownloads": request = .currentDownloads
        case "acknowledgeEvents":
            request = .acknowledgeEvents(throughSequence: try container.decode(Int64.self, forKey: .throughSequence))
        case "registerApp": request = .registerApp(try container.decode(AppRegistration.self, forKey: .app))
        case "subscribeEvents": request = .subscribeEvents
        case "respondToChallenge":
            request = .respondToChallenge(
                uniqueIdentifier: try container.decode(String.self, forKey: .uniqueIdentifier),
                disposition: try container.decode(Int.self, forKey: .disposition),
                user: try container.decodeIfPresent(String.self, forKey: .user),
                password: try container.decodeIfPresent(String.self, forKey: .password))
        case "listDownloads":
            request = .listDownloads(
                app: try container.decodeIfPresent(String.self, forKey: .app),
                states: try container.decodeIfPresent([String].self, forKey: .states),
                limit: try container.decodeIfPresent(Int.self, forKey: .limit))
        case "promoteDownload":
            request = .promoteDownload(uniqueIdentifier: try container.decode(String.self, forKey: .uniqueIdentifier))
        case "cancelDownload":
            request = .cancelDownload(uniqueIdentifier: try container.decode(String.self, forKey: .uniqueIdentifier))
        case "lockStatus": request = .lockStatus(app: try container.decode(String.self, forKey: .app))
        case "installApp": request = .installApp(try container.decode(InstallRequest.self, forKey: .install))
        case "listApps": request = .listApps
        case "simulate":
            request = .simulate(
                app: try container.decode(String.self, forKey: .app),
                event: try container.decode(SimulatedEvent.self, forKey: .event))
        case "clearQuarantine": request = .clearQuarantine(app: try container.decode(String.self, forKey: .app))
        case "purge": request = .purge(dryRun: try container.decode(Bool.self, forKey: .dryRun))
        case "retryDownload":
            request = .retryDownload(uniqueIdentifier: try container.decode(String.self, forKey: .uniqueIdentifier))
        case "uninstallApp":
            request = .uninstallApp(
                app: try container.decode(String.self, forKey: .app),
                keepData: try container.decodeIfPresent(Bool.self, forKey: .keepData) ?? false)
        case "packs": request = .packs(try container.decode(PackCommand.self, forKey: .packs))
        default: throw UnknownMessageType(type: type, id: id)
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(request.type, forKey: .type)
        switch request {
        case .hello(let version, let client):
            try container.encode(version, forKey: .protocolVersion)
            try container.encode(client, forKey: .client)
        case .status, .currentDownloads, .subscribeEvents: break
        case .schedule(let download): try container.encode(download, forKey: .download)
        case .startForeground(let identifier), .cancel(let identifier):
            try container.encode(identifier, forKey: .identifier)
        case .acknowledgeEvents(let sequence): try container.encode(sequence, forKey: .throughSequence)
        case .registerApp(let app): try container.encode(app, forKey: .app)
        case .respondToChallenge(let uniqueIdentifier, let disposition, let user, let password):
            try container.encode(uniqueIdentifier, forKey: .uniqueIdentifier)
            try container.encode(disposition, forKey: .disposition)
            try container.encodeIfPresent(user, forKey: .user)
            try container.encodeIfPresent(password, forKey: .password)
        case .listDownloads(let app, let states, let limit):
            try container.encodeIfPresent(app, forKey: .app)
            try container.encodeIfPresent(states, forKey: .states)
            try container.encodeIfPresent(limit, forKey: .limit)
        case .promoteDownload(let uniqueIdentifier), .cancelDownload(let uniqueIdentifier):
            try container.encode(uniqueIdentifier, forKey: .uniqueIdentifier)
        case .lockStatus(let app), .clearQuarantine(let app): try container.encode(app, forKey: .app)
        case .installApp(let install): try container.encode(install, forKey: .install)
        case .listApps: break
        case .simulate(let app, let event):
            try container.encode(app, forKey: .app)
            try container.encode(event, forKey: .event)
        case .purge(let dryRun): try container.encode(dryRun, forKey: .dryRun)
        case .retryDownload(let uniqueIdentifier): try container.encode(uniqueIdentifier, forKey: .uniqueIdentifier)
        case .uninstallApp(let app, let keepData):
            try container.encode(app, forKey: .app)
            try container.encode(keepData, forKey: .keepData)
        case .packs(let command): try container.encode(command, forKey: .packs)
        }
    }
}

/// What a client asks basd for.
package enum Request: Sendable, Hashable {
    /// The handshake: must be the first request on a connection. Answered with
    /// ``ServerMessage/Result/welcome(_:)``, or with error 55 (and a close) when `protocolVersion`
    /// is not supported or an app's bundle identifier is not registered.
    case hello(protocolVersion: Int, client: ClientInfo)
    /// basd's state: answered with ``ServerMessage/Result/status(_:)``.
    case status
    /// `BADownloadManager.scheduleDownload(_:)` (apps): answered with
    /// ``ServerMessage/Result/downloads(_:)`` holding the one download as stored.
    case schedule(DownloadDescription)
    /// `BADownloadManager.startForegroundDownload(_:)` of the client app's download `identifier`.
    case startForeground(identifier: String)
    /// `BADownloadManager.cancel(_:)` of the client app's download `identifier`.
    case cancel(identifier: String)
    /// `BADownloadManager.fetchCurrentDownloads()`: answered with ``ServerMessage/Result/downloads(_:)``.
    case currentDownloads
    /// The client has handled every event up to and including `throughSequence`; basd stops
    /// redelivering them.
    case acknowledgeEvents(throughSequence: Int64)
    /// Registers (or updates) an app (CLI only; `ba install`): answered with `ok`.
    case registerApp(AppRegistration)
    /// Starts pushing events: an app gets its own app's undelivered events, which it must
    /// acknowledge (while subscribed, basd does not wake the extension for them); the CLI gets
    /// every app's events as they happen, to watch, without acknowledging. Answered with `ok`.
    case subscribeEvents
    /// The app's answer to a `needsCredentials` event: `disposition` is
    /// `URLSession.AuthChallengeDisposition`'s raw value (0 use the credential, 1 default handling,
    /// 2 cancel, 3 reject the protection space). Answered with `ok`.
    case respondToChallenge(uniqueIdentifier: String, disposition: Int, user: String?, password: String?)
    /// Every app's downloads, or one app's (CLI only), ordered by app then oldest first.
    ///
    /// - `states`: only downloads in these states (``DownloadListing/stateNames``, or `active` for
    ///   created, waiting and downloading); nil for every state. An unknown name is refused with
    ///   ``DaemonErrorCode/invalidRequest``.
    /// - `limit`: at most this many (0 for all). With a limit the answer is
    ///   ``ServerMessage/Result/downloadList(_:)``, which says how many more matched; without one it
    ///   is ``ServerMessage/Result/downloads(_:)`` holding every match (the request of older clients).
    ///
    /// basd reads the rows page by page and sends each page as its own part (`"more": true`), so
    /// no listing is held whole in basd's memory.
    case listDownloads(app: String? = nil, states: [String]? = nil, limit: Int? = nil)
    /// Promotes any app's download to the foreground by unique identifier (CLI only).
    case promoteDownload(uniqueIdentifier: String)
    /// Cancels any app's download by unique identifier (CLI only).
    case cancelDownload(uniqueIdentifier: String)
    /// Who holds the app group's exclusive-control lock (CLI only): answered with
    /// ``ServerMessage/Result/lock(_:)``.
    case lockStatus(app: String)
    /// Installs or updates the app in `appDirectory` (CLI only): basd reads its `Info.plist`,
    /// registers it, fetches its manifest, calls its extension with `.install` or `.update` and
    /// schedules what it returns. Answered, when the call has ended, with
    /// ``ServerMessage/Result/extensionRun(_:)``.
    case installApp(InstallRequest)
    /// Every registered app (CLI only): answered with ``ServerMessage/Result/apps(_:)``.
    case listApps
    /// Wakes an app's extension as if the event had happened (CLI only; `ba simulate`), outside
    /// the daily runtime allowance but within the per-call deadline. Answered with
    /// ``ServerMessage/Result/extensionRun(_:)``.
    case simulate(app: String, event: SimulatedEvent)
    /// Lets a quarantined extension run again (CLI only). Answered with `ok`.
    case clearQuarantine(app: String)
    /// What basd would purge to get free space back over its threshold, or purges it (CLI only):
    /// answered with ``ServerMessage/Result/purge(_:)``.
    case purge(dryRun: Bool)
    /// Removes an app (CLI only; `ba uninstall`): cancels its downloads, waits out a running call
    /// of its extension, removes its registration, downloads, events and runs, and deletes its app
    /// group container unless `keepData` or another registered app shares the group. Answered with
    /// ``ServerMessage/Result/uninstalled(_:)``, also when the app was not registered.
    case uninstallApp(app: String, keepData: Bool)
    /// Tries a download again now (CLI only; `ba retry`): a failed one becomes active again,
    /// resuming from its partial file where it is still valid; an active one waiting out a backoff
    /// (or for disk space) starts at once. Answered with `ok`.
    case retryDownload(uniqueIdentifier: String)
    /// Lists, ensures, removes, verifies, checks, follows or cancels asset packs (`ba packs`; an
    /// app for its own packs): answered with ``ServerMessage/Result/packs(_:)``.
    case packs(PackCommand)

    /// The wire name (`type`) of the request.
    package var type: String {
        switch self {
        case .hello: "hello"
        case .status: "status"
        case .schedule: "schedule"
        case .startForeground: "startForeground"
        case .cancel: "cancel"
        case .currentDownloads: "currentDownloads"
        case .acknowledgeEvents: "acknowledgeEvents"
        case .registerApp: "registerApp"
        case .subscribeEvents: "subscribeEvents"
        case .respondToChallenge: "respondToChallenge"
        case .listDownloads: "listDownloads"
        case .promoteDownload: "promoteDownload"
        case .cancelDownload: "cancelDownload"
        case .lockStatus: "lockStatus"
        case .installApp: "installApp"
        case .listApps: "listApps"
        case .simulate: "simulate"
        case .clearQuarantine: "clearQuarantine"
        case .purge: "purge"
        case .uninstallApp: "uninstallApp"
        case .retryDownload: "retryDownload"
        case .packs: "packs"
        }
    }
}

/// An event `ba simulate` can wake an extension with.
package enum SimulatedEvent: String, Sendable, Hashable, Codable, CaseIterable {
    case install, update, periodic
    /// `BAContentRequest.languageChange`: the user's preferred languages changed.
    case languageChange = "language-change"
}

/// Who is connecting, sent in `hello`.
package struct ClientInfo: Sendable, Hashable, Codable {
    /// The kind of client.
    package enum Role: String, Sendable, Hashable, Codable, CaseIterable {
        /// An app's process (`BADownloadManager` in the app).
        case app
        /// An extension's runner process.
        case `extension`
        /// A `ba` command.
        case cli
        /// A launcher or status display probing the app's packs: it names the app, may only list
        /// its packs and follow their events, and does not mark the app launched (a basd that
        /// does not know the role refuses the hello, so a probe never counts as a launch).
        case probe
    }

    /// The kind of client.
    package var role: Role
    /// The app's bundle identifier (an app or its extension); nil for the CLI.
    package var bundleIdentifier: String?
    /// The client's process id, as it claims (basd trusts only the kernel's `SO_PEERCRED`).
    package var pid: Int32

    /// Creates client info.
    package init(role: Role, bundleIdentifier: String? = nil, pid: Int32) {
        self.role = role
        self.bundleIdentifier = bundleIdentifier
        self.pid = pid
    }
}

/// Thrown from `init(from:)` for an unknown `type`, so the codec can tell it from bad JSON.
struct UnknownMessageType: Error {
    var type: String
    var id: UInt64?
}

/// An app as `ba install` registers it (`registerApp`).
package struct AppRegistration: Sendable, Hashable, Codable {
    /// `CFBundleIdentifier`.
    package var bundleIdentifier: String
    /// The app's version.
    package var version: String
    /// `BAAppGroupID`: the app group whose container receives the finished files.
    package var appGroupIdentifier: String?
    /// The app's directory.
    package var appDirectory: String
    /// The extension library's absolute path, if the app has one.
    package var extensionPath: String?
    /// Creates a registration.
    package init(
        bundleIdentifier: String, version: String, appGroupIdentifier: String?, appDirectory: String,
        extensionPath: String?
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.version = version
        self.appGroupIdentifier = appGroupIdentifier
        self.appDirectory = appDirectory
        self.extensionPath = extensionPath
    }
}
