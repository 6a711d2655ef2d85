import ArgumentParser
import BADaemonProtocol

/// What `ba promote` and `ba cancel` share: the download named by unique identifier (or an
/// unambiguous prefix of one, as `ba downloads` prints it) and the request sent for it.
struct DownloadCommand {
    let daemon: DaemonOptions
    let uniqueIdentifier: String

    /// Sends `makeRequest(full unique identifier)` and prints `done(full unique identifier)`.
    /// Exits 32 when basd answers 101 (no active download has it), 64 for an ambiguous prefix.
    func run(_ makeRequest: (String) -> Request, done: (String) -> String) throws {
        let session = try daemon.connect()
        let target = try resolve(in: session)
        let request = makeRequest(target)
        let result: ServerMessage.Result
        do {
            result = try session.client.call(request)
        } catch let error where error.code == 101 {
            printError(
                "no active download has unique identifier \(target) (it finished, failed, was cancelled or "
                    + "never existed; `ba downloads` lists them): \(error.message)")
            throw ExitCode(BAExitCode.downloadNotActive.rawValue)
        } catch {
            throw session.failure(error, request: request)
        }
        guard case .ok = result else { throw session.unexpected(result, to: request) }
        print(done(target))
    }

    /// The full unique identifier: `uniqueIdentifier` itself when a download has it exactly (or
    /// when basd cannot list downloads), else the one download whose identifier starts with it.
    func resolve(in session: DaemonSession) throws -> String {
        guard case .downloads(let all)? = try? session.client.call(.listDownloads(app: nil)) else {
            return uniqueIdentifier
        }
        let identifiers = Set(all.map(\.uniqueIdentifier))
        if identifiers.contains(uniqueIdentifier) { return uniqueIdentifier }
        let matches = identifiers.filter { $0.hasPrefix(uniqueIdentifier) }.sorted()
        if matches.count > 1 {
            printError(
                "\(uniqueIdentifier) is the start of \(matches.count) downloads' unique identifiers "
                    + "(\(matches.joined(separator: ", "))); give more of it")
            throw ExitCode(BAExitCode.usage.rawValue)
        }
        return matches.first ?? uniqueIdentifier
    }
}

/// `ba promote`: moves a download to the foreground.
struct Promote: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Promote a download (any app's) to the foreground: it starts at once and fails fast.",
        discussion: """
            Exits 0 when promoted, 32 when no active download has that unique identifier.

            Examples:
              ba promote 6F9619FF-8B86-D011-B42D-00C04FC964FF
              ba promote 6F9619FF        # an unambiguous prefix, as `ba downloads` prints it
            """)

    @OptionGroup var daemon: DaemonOptions

    @Argument(help: "The download's unique identifier, or an unambiguous prefix of it.")
    var uniqueIdentifier: String

    func run() throws {
        try DownloadCommand(daemon: daemon, uniqueIdentifier: uniqueIdentifier).run(
            { .promoteDownload(uniqueIdentifier: $0) }, done: { "promoted \($0) to the foreground" })
    }
}

/// `ba cancel`: cancels a download.
struct Cancel: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cancel a download (any app's).",
        discussion: """
            Exits 0 when cancelled, 32 when no active download has that unique identifier.

            Examples:
              ba cancel 6F9619FF-8B86-D011-B42D-00C04FC964FF
              ba cancel 6F9619FF        # an unambiguous prefix, as `ba downloads` prints it
            """)

    @OptionGroup var daemon: DaemonOptions

    @Argument(help: "The download's unique identifier, or an unambiguous prefix of it.")
    var uniqueIdentifier: String

    func run() throws {
        try DownloadCommand(daemon: daemon, uniqueIdentifier: uniqueIdentifier).run(
            { .cancelDownload(uniqueIdentifier: $0) }, done: { "cancelled \($0)" })
    }
}

/// `ba retry`: tries a failed download again, or cuts a retry's wait short.
struct Retry: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Try a download (any app's) again now: a failed one is requeued, a waiting one starts at once.",
        discussion: """
            A failed download becomes active again and resumes from its partial file where the server's \
            validator still matches (else from the start); one waiting out a backoff after a failed attempt, \
            or waiting for disk space, starts at once. Exits 0 when done, 32 when no download has that unique \
            identifier (or it finished), 33 when the app already has another active download with the same \
            identifier.

            Examples:
              ba retry 6F9619FF-8B86-D011-B42D-00C04FC964FF
              ba retry 6F9619FF        # an unambiguous prefix, as `ba downloads` prints it
            """)

    @OptionGroup var daemon: DaemonOptions

    @Argument(help: "The download's unique identifier, or an unambiguous prefix of it.")
    var uniqueIdentifier: String

    func run() throws {
        try DownloadCommand(daemon: daemon, uniqueIdentifier: uniqueIdentifier).run(
            { .retryDownload(uniqueIdentifier: $0) }, done: { "retrying \($0)" })
    }
}
