import ArgumentParser
import BAAppBundle
import BACore
import BAExtensionHost
import BackgroundAssets
import Foundation

/// `ba run-extension`: one entry point of one extension, with no daemon.
struct RunExtension: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run-extension",
        abstract: "Run one entry point of an extension library in isolation and print what it returned.",
        discussion: """
            The library runs in a ba-extension-runner child process under a deadline and a memory cap;
            the verdict says how the call ended. Returned downloads are validated and listed by identifier.

            Examples:
              ba run-extension libMyExtension.so --event install --manifest manifest.json
              ba run-extension --app /opt/example-game --event install --manifest manifest.json
              ba run-extension libMyExtension.so --app-group group.com.example.game --event install
              ba run-extension libMyExtension.so --event periodic --manifest manifest.json --json
              ba run-extension libMyExtension.so --event finished \\
                 --download-json '{"identifier":"level-1","url":"https://cdn.example.com/l1.pak"}' --file ./l1.pak
              ba run-extension libMyExtension.so --event should-download --pack base --pack extras:2:1048576
            """)

    enum Event: String, ExpressibleByArgument, CaseIterable {
        case install, update, periodic, finished, failed, terminate
        case languageChange = "language-change"
        case shouldDownload = "should-download"
    }

    @Argument(help: "The extension's shared library (.so); default: the BAExtensionPath of --app's Info.plist.")
    var library: String?

    @Option(
        help:
            ArgumentHelp(
                "The entry point to call: install, update, periodic, language-change (downloads(for:…)), finished, "
                    + "failed, terminate (extensionWillTerminate()), or should-download (shouldDownload(_:), with --pack)."
            )
    )
    var event: Event

    @Option(
        help: "The manifest file handed to downloads(for:…); a read-only copy is passed and deleted after the call.")
    var manifest: String?

    @Option(help: "The manifest URL to report (default: the manifest's file URL).")
    var manifestURL: String?

    @Option(help: "Remaining non-essential allowance in bytes reported to the extension (default: unrestricted).")
    var downloadSizeRemaining: Int?

    @Option(help: "Remaining essential allowance in bytes reported to the extension (default: unrestricted).")
    var essentialDownloadSizeRemaining: Int?

    @Option(
        help:
            "For finished/failed: the download, as a JSON object (or @FILE) with identifier, url and optionally fileSize, essential, priority, applicationGroupIdentifier, sha256."
    )
    var downloadJSON: String?

    @Option(
        help:
            "For finished: the finished file (default: an empty temporary file). The extension should move it; ba says when it did not (basd keeps such a file for the app)."
    )
    var file: String?

    @Option(
        help: ArgumentHelp(
            "For should-download: an asset pack to ask about, ID or ID:VERSION:DOWNLOAD-SIZE (default version 1, size 0); repeat for several, asked in order.",
            valueName: "pack"))
    var pack: [String] = []

    @Option(help: "For failed: the error code (default 102, downloadFailedToStart).")
    var errorCode: Int32 = 102

    @Option(help: "For failed: the error message.")
    var errorMessage: String = "the download failed"

    @Option(help: "For failed: the error domain.")
    var errorDomain: String = BAErrorDomain

    @Option(help: "Wall-clock deadline of the call, in seconds.")
    var timeout: Double = 30

    @Option(help: "Memory cap (RLIMIT_DATA) in MiB, set before the library is loaded; 0 for none.")
    var memoryLimit: UInt64 = BAExtensionInvocation.defaultMemoryLimitBytes >> 20

    @Option(help: "Most downloads one call may return.")
    var maxDownloads: Int = BAExtensionInvocation.defaultMaximumDownloads

    @Option(
        help:
            "The app group (BAAppGroupID) the extension's container is named for, so that containerURL(forSecurityApplicationGroupIdentifier:) finds it (default: from --app, from the Info.plist of the app directory holding the library, or from --download-json)."
    )
    var appGroup: String?

    @Option(
        help: ArgumentHelp(
            "The app directory: its Info.plist gives the app group (BAAppGroupID) and, without a library argument, the extension (BAExtensionPath).",
            valueName: "app-dir"))
    var app: String?

    @Option(
        help:
            "The app group container (holds the exclusive-control lock), a folder named for the app group; default: a temporary one, named for the app group."
    )
    var appGroupContainer: String?

    @Option(
        name: .customLong("repeat"),
        help:
            "Make the call N times and print the median and p99 call time as the host made it (spawn to reap); stops at the first call that is not ok."
    )
    var repeatCount: Int = 1

    @Flag(
        help:
            "Run without the sandbox (network, files, system calls, process count): for debugging only. Every process of the call still ends with it."
    )
    var noSandbox = false

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    @Flag(help: "Also print what the extension wrote to stdout/stderr.")
    var verbose = false

    func validate() throws {
        guard library != nil || app != nil else {
            throw ValidationError("give the extension library (LIB), or --app APP_DIR whose Info.plist names it")
        }
        guard appGroup == nil || app == nil else {
            throw ValidationError("give --app-group or --app (whose Info.plist names the group), not both")
        }
        if let appGroup, let violation = DownloadRules.checkFolderName(appGroup, what: "--app-group") {
            throw ValidationError(violation.reason)
        }
        guard timeout > 0, timeout <= 86_400 else {
            throw ValidationError("--timeout must be between 0 and 86400 seconds")
        }
        guard maxDownloads > 0 else { throw ValidationError("--max-downloads must be positive") }
        guard repeatCount >= 1, repeatCount <= 100_000 else {
            throw ValidationError("--repeat must be between 1 and 100000")
        }
        switch event {
        case .finished, .failed:
            guard downloadJSON != nil else { throw ValidationError("--event \(event.rawValue) needs --download-json") }
        case .install, .update, .periodic, .languageChange, .terminate, .shouldDownload:
            guard downloadJSON == nil, file == nil else {
                throw ValidationError("--download-json and --file go with --event finished or failed")
            }
        }
        if event == .shouldDownload {
            guard !pack.isEmpty else { throw ValidationError("--event should-download needs at least one --pack ID") }
            _ = try packRecords()
        } else if !pack.isEmpty {
            throw ValidationError("--pack goes with --event should-download")
        }
    }

    func run() async throws {
        let workspace = try BAExtensionWorkspace()
        defer { workspace.remove() }
        let invocation: BAExtensionInvocation
        do {
            invocation = try makeInvocation(workspace: workspace)
        } catch let error as InputError {
            FileHandle.standardError.write(Data("ba: \(error.message)\n".utf8))
            throw ExitCode(BAExitCode.noInput.rawValue)
        } catch let error as BAExtensionHostError {
            FileHandle.standardError.write(Data("ba: \(error.message)\n".utf8))
            throw ExitCode(BAExitCode.noInput.rawValue)
        }
        var result: BAExtensionRunResult
        var durations: [Duration] = []
        do {
            let supervisor = try BAExtensionSupervisor(
                sandbox: noSandbox ? .disabled : .fromEnvironment, warmRunner: repeatCount > 1)
            repeat {
                result = try await supervisor.run(invocation)
                durations.append(result.duration)
            } while result.verdict == .ok && durations.count < repeatCount
        } catch {
            FileHandle.standardError.write(Data("ba: \(error)\n".utf8))
            throw ExitCode(BAExitCode.hostFailure.rawValue)
        }
        let report = RunReport(
            result, timing: repeatCount > 1 ? CallTiming(durations) : nil,
            packs: event == .shouldDownload ? pack.map { String($0.split(separator: ":").first ?? "") } : [])
        print(json ? report.json() : report.table(verbose: verbose))
        if result.verdict == .ok, case .finished(_, let filePath) = invocation.event,
            FileManager.default.fileExists(atPath: filePath)
        {
            FileHandle.standardError.write(Data((Self.notMovedNote(filePath) + "\n").utf8))
        }
        let code = BAExitCode.code(for: result)
        if code != .ok {
            if invocation.appGroupContainerPath.map({ URL(fileURLWithPath: $0).lastPathComponent })
                == Self.unnamedContainer
            {
                FileHandle.standardError.write(Data((Self.unnamedContainerHint + "\n").utf8))
            }
            throw ExitCode(code.rawValue)
        }
    }

    /// The temporary container's name when no app group is known: no group's lookup finds it.
    static let unnamedContainer = "no-app-group"

    /// Said after a call that did not end `ok` in an unnamed container.
    static let unnamedContainerHint =
        "ba: note: the extension ran without an app group, so FileManager.containerURL("
        + "forSecurityApplicationGroupIdentifier:) returned nil in it; give --app-group GROUP or --app APP_DIR "
        + "(its Info.plist's BAAppGroupID) to give it the group's container"

    /// Said after an `ok` finished call that left the file where it was.
    static func notMovedNote(_ path: String) -> String {
        "ba: note: the extension did not move the finished file \(path); basd keeps such a file for the app's "
            + "next connection (if the move failed: FileManager.replaceItemAt does not work on Linux, use "
            + "removeItem and moveItem, see docs/apple-api-compatibility.md)"
    }

    struct InputError: Error { var message: String }

    /// The `--pack` values as the packs a shouldDownload call is asked about.
    func packRecords() throws(ValidationError) -> [AssetPackRecord] {
        try pack.map { (value: String) throws(ValidationError) -> AssetPackRecord in
            let fields = value.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 1 || fields.count == 3, !fields[0].isEmpty,
                fields.count == 1 || (Int64(fields[1]) != nil && Int64(fields[2]) != nil)
            else {
                throw ValidationError("--pack \(value): expected ID or ID:VERSION:DOWNLOAD-SIZE, e.g. extras:2:1048576")
            }
            return AssetPackRecord(
                id: fields[0], version: fields.count == 3 ? Int64(fields[1]) ?? 1 : 1,
                downloadSize: fields.count == 3 ? Int64(fields[2]) ?? 0 : 0)
        }
    }

    func makeInvocation(workspace: BAExtensionWorkspace) throws -> BAExtensionInvocation {
        let appBundle = try app.map(Self.loadApp)
        guard let library = library ?? appBundle?.extensionPath else {
            throw InputError(
                message:
                    "\(appBundle?.infoPlistPath ?? "the app's Info.plist") names no BAExtensionPath: give the extension library"
            )
        }
        guard FileManager.default.fileExists(atPath: library) else {
            throw InputError(message: "no such extension library: \(library)")
        }
        let libraryPath = URL(fileURLWithPath: library).standardizedFileURL.path
        let (container, group) = try container(libraryPath: libraryPath, appBundle: appBundle, workspace: workspace)
        // As basd does: a download that names no group is the app's.
        func download() throws -> DownloadDescription {
            var record = try parseDownload()
            if record.applicationGroupIdentifier?.isEmpty ?? true { record.applicationGroupIdentifier = group }
            return record
        }
        let event: RunnerEvent
        switch self.event {
        case .install, .update, .periodic, .languageChange:
            let request: Int32 =
                switch self.event {
                case .install: 1
                case .update: 2
                case .languageChange: 4
                default: 3
                }
            let copy = try workspace.readOnlyFile(named: "manifest.json", contents: try manifestContents())
            event = .contentRequest(
                request: request, manifestPath: copy,
                manifestURL: manifestURL ?? URL(fileURLWithPath: manifest ?? copy).absoluteString,
                restrictedRemaining: Int64(downloadSizeRemaining ?? -1),
                restrictedEssentialRemaining: Int64(essentialDownloadSizeRemaining ?? -1))
        case .finished:
            let download = try download()
            let path = try file ?? workspace.emptyFile(named: "finished-\(UUID().uuidString)")
            guard FileManager.default.fileExists(atPath: path) else {
                throw InputError(message: "no such file: \(path)")
            }
            event = .finished(download, filePath: URL(fileURLWithPath: path).standardizedFileURL.path)
        case .failed:
            event = .failed(
                try download(), ErrorRecord(domain: errorDomain, code: errorCode, message: errorMessage))
        case .terminate:
            event = .willTerminate
        case .shouldDownload:
            event = .shouldDownload(try packRecords())
        }
        return BAExtensionInvocation(
            libraryPath: libraryPath, event: event, timeout: .milliseconds(Int64(timeout * 1000)),
            memoryLimitBytes: memoryLimit << 20, maximumDownloads: maxDownloads, appGroupContainerPath: container)
    }

    /// The app group container the extension gets, and its group: `--app-group-container`, else a
    /// temporary folder named for the app group (so that
    /// `containerURL(forSecurityApplicationGroupIdentifier:)`, which finds a container by its folder
    /// name, finds it), else an unnamed temporary folder (no group).
    func container(
        libraryPath: String, appBundle: AppBundle?, workspace: BAExtensionWorkspace
    ) throws -> (path: String, group: String?) {
        let named = appGroup ?? appBundle?.appGroupIdentifier
        if let appGroupContainer {
            let folder = URL(fileURLWithPath: appGroupContainer).standardizedFileURL.lastPathComponent
            if let named, folder != named {
                throw InputError(
                    message:
                        "--app-group-container \(appGroupContainer) is not named for the app group \(named): "
                        + "containerURL(forSecurityApplicationGroupIdentifier:) finds a container by its folder name; "
                        + "give a folder named \(named), or leave out --app-group-container for a temporary one")
            }
            return (appGroupContainer, named ?? folder)
        }
        let group =
            named ?? Self.enclosingApp(ofLibrary: libraryPath)?.appGroupIdentifier
            ?? downloadGroup()
        // Laid out as basd's: `…/groups/GROUP`.
        return (try workspace.directory(group.map { "groups/" + $0 } ?? Self.unnamedContainer), group)
    }

    /// The app in `directory` (`--app`), or a clear error.
    static func loadApp(_ directory: String) throws -> AppBundle {
        do {
            return try AppBundle.load(directory: directory)
        } catch {
            throw InputError(message: "--app \(directory): \(error)")
        }
    }

    /// The app whose directory holds `libraryPath` and whose `BAExtensionPath` names it: the
    /// nearest folder above the library with an `Info.plist` that loads.
    static func enclosingApp(ofLibrary libraryPath: String) -> AppBundle? {
        var folder = URL(fileURLWithPath: libraryPath).deletingLastPathComponent()
        while folder.path != "/" && !folder.path.isEmpty {
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Info.plist").path) {
                guard let app = try? AppBundle.load(directory: folder.path) else { return nil }
                let named = app.extensionPath.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path }
                return named == URL(fileURLWithPath: libraryPath).resolvingSymlinksInPath().path ? app : nil
            }
            folder.deleteLastPathComponent()
        }
        return nil
    }

    /// The `applicationGroupIdentifier` of `--download-json`, when it names a usable folder.
    func downloadGroup() -> String? {
        guard downloadJSON != nil, let group = try? parseDownload().applicationGroupIdentifier,
            DownloadRules.checkFolderName(group, what: "group") == nil
        else { return nil }
        return group
    }

    /// The manifest's bytes, or an empty JSON object without `--manifest`.
    func manifestContents() throws -> Data {
        guard let manifest else { return Data("{}".utf8) }
        guard let contents = FileManager.default.contents(atPath: manifest) else {
            throw InputError(message: "cannot read the manifest \(manifest)")
        }
        return contents
    }

    func parseDownload() throws -> DownloadDescription {
        guard var text = downloadJSON else { throw InputError(message: "--download-json is required") }
        if text.hasPrefix("@") {
            let path = String(text.dropFirst())
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw InputError(message: "cannot read \(path)")
            }
            text = String(decoding: contents, as: UTF8.self)
        }
        do {
            let parsed = try JSONDecoder().decode(DownloadJSON.self, from: Data(text.utf8))
            let record = parsed.record
            if let violation = DownloadRules.check(record) {
                throw InputError(message: "--download-json: \(violation.reason)")
            }
            return record
        } catch let error as InputError {
            throw error
        } catch {
            throw InputError(message: "--download-json is not a download object: \(error)")
        }
    }
}

/// A download as JSON, in `ba`'s output and in `--download-json`.
struct DownloadJSON: Codable, Equatable {
    var identifier: String
    var url: String
    var essential: Bool?
    var fileSize: Int64?
    var priority: Int64?
    var applicationGroupIdentifier: String?
    var sha256: String?

    init(_ record: DownloadDescription) {
        identifier = record.identifier
        url = record.url
        essential = record.isEssential
        fileSize = record.fileSize
        priority = record.priority
        applicationGroupIdentifier = record.applicationGroupIdentifier
        sha256 = record.sha256
    }

    var record: DownloadDescription {
        DownloadDescription(
            identifier: identifier, uniqueIdentifier: UUID().uuidString, url: url,
            applicationGroupIdentifier: applicationGroupIdentifier, priority: priority ?? DownloadRules.defaultPriority,
            isEssential: essential ?? false, fileSize: fileSize ?? 0, sha256: sha256, state: .finished)
    }
}
