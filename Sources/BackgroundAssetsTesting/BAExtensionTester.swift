import BACore
@_exported import BAExtensionHost
@_exported import BackgroundAssets
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Calls one entry point of an extension inside `swift test`, so you can assert on what it returns.
///
/// Two ways, both with the host's validation rules:
/// - ``init(libraryPath:runnerPath:)`` runs your built `.so` exactly as the system does: in a
///   `ba-extension-runner` child process, under a deadline and a memory cap, through the C ABI.
/// - ``downloads(of:for:manifest:extensionInfo:)`` calls your type directly, in-process (fast,
///   debuggable, but no isolation).
///
/// ```swift
/// import BackgroundAssetsTesting
/// import Testing
///
/// @Test func installReturnsEssentialCatalog() async throws {
///     let tester = try BAExtensionTester(libraryPath: ".build/debug/libMyExtension.so")
///     let run = try await tester.downloads(for: .install, manifest: Data(#"{"assets": []}"#.utf8))
///     #expect(run.verdict == .ok)
///     #expect(run.urlDownloads.map(\.identifier) == ["catalog"])
/// }
/// ```
public struct BAExtensionTester: Sendable {
    /// The extension library.
    public let libraryPath: String
    private let supervisor: BAExtensionSupervisor
    /// Deadline per call.
    public var timeout: Duration = BAExtensionInvocation.defaultTimeout
    /// Memory cap per call, in bytes.
    public var memoryLimitBytes: UInt64 = BAExtensionInvocation.defaultMemoryLimitBytes
    /// Extra environment for the extension's process.
    public var environment: [String: String] = [:]

    /// - Parameters:
    ///   - libraryPath: The extension's `.so`.
    ///   - runnerPath: `ba-extension-runner`; found like ``BAExtensionSupervisor/init(runnerPath:)``
    ///     does when nil (a SwiftPM test finds the one built next to it).
    public init(libraryPath: String, runnerPath: String? = nil) throws {
        self.libraryPath = libraryPath
        self.supervisor = try BAExtensionSupervisor(runnerPath: runnerPath)
    }

    /// Calls `downloads(for:manifestURL:extensionInfo:)` with `manifest` as the manifest's bytes.
    public func downloads(
        for request: BAContentRequest, manifest: Data,
        extensionInfo: BAAppExtensionInfo = BAAppExtensionInfo(
            restrictedDownloadSizeRemaining: nil, restrictedEssentialDownloadSizeRemaining: nil)
    ) async throws -> BAExtensionRunResult {
        let directory = try BAExtensionWorkspace()
        defer { directory.remove() }
        let manifestPath = try directory.readOnlyFile(named: "manifest.json", contents: manifest)
        var invocation = BAExtensionInvocation.contentRequest(
            request, libraryPath: libraryPath, manifestPath: manifestPath, extensionInfo: extensionInfo)
        invocation.appGroupContainerPath = try directory.directory("app-group")
        return try await run(invocation)
    }

    /// Calls `backgroundDownload(_:finishedWithFileURL:)`.
    public func finished(_ download: BAURLDownload, fileURL: URL) async throws -> BAExtensionRunResult {
        let directory = try BAExtensionWorkspace()
        defer { directory.remove() }
        var invocation = BAExtensionInvocation(
            libraryPath: libraryPath, event: .finished(download.record, filePath: fileURL.path))
        invocation.appGroupContainerPath = try directory.directory("app-group")
        return try await run(invocation)
    }

    /// Calls `backgroundDownload(_:failedWithError:)` with a Background Assets error.
    public func failed(_ download: BAURLDownload, error: BAError) async throws -> BAExtensionRunResult {
        let record = ErrorRecord(domain: BAErrorDomain, code: Int32(error.code.rawValue), message: error.reason)
        return try await run(BAExtensionInvocation(libraryPath: libraryPath, event: .failed(download.record, record)))
    }

    /// Calls `shouldDownload(_:)` of a ``ManagedDownloaderExtension`` (`should_download` in C)
    /// once per pack, in one process, as basd does before an install's or update's packs. The
    /// result's `shouldDownload` holds the answers in order (all true for an extension without
    /// the entry point).
    public func shouldDownload(_ packs: [AssetPack]) async throws -> BAExtensionRunResult {
        let records = packs.map {
            AssetPackRecord(
                id: $0.id, version: Int64($0.version), downloadSize: Int64($0.downloadSize),
                userInfo: $0.userInfo.map(Array.init))
        }
        return try await run(BAExtensionInvocation(libraryPath: libraryPath, event: .shouldDownload(records)))
    }

    private func run(_ invocation: BAExtensionInvocation) async throws -> BAExtensionRunResult {
        var invocation = invocation
        invocation.timeout = timeout
        invocation.memoryLimitBytes = memoryLimitBytes
        invocation.environment = environment
        return try await supervisor.run(invocation)
    }

    /// What an extension type returned when called in-process, after the host's validation.
    public struct InProcessResult {
        /// Downloads that pass the host's rules, sorted by identifier.
        public var downloads: [BAURLDownload]
        /// Downloads the host would reject, with the reason.
        public var rejected: [(download: BADownload, reason: String)]
    }

    /// Calls `downloads(for:manifestURL:extensionInfo:)` on a fresh instance of `type` in this
    /// process, with a read-only temporary copy of `manifest` that is deleted afterwards, and
    /// applies the host's validation rules to the result.
    public static func downloads<E: BADownloaderExtension>(
        of type: E.Type, for request: BAContentRequest, manifest: Data,
        extensionInfo: BAAppExtensionInfo = BAAppExtensionInfo(
            restrictedDownloadSizeRemaining: nil, restrictedEssentialDownloadSizeRemaining: nil)
    ) throws -> InProcessResult {
        let directory = try BAExtensionWorkspace()
        defer { directory.remove() }
        let manifestPath = try directory.readOnlyFile(named: "manifest.json", contents: manifest)
        let returned = E().downloads(
            for: request, manifestURL: URL(fileURLWithPath: manifestPath), extensionInfo: extensionInfo)
        var result = InProcessResult(downloads: [], rejected: [])
        var urlDownloads: [BAURLDownload] = []
        for download in returned.sorted(by: { $0.identifier < $1.identifier }) {
            if let urlDownload = download as? BAURLDownload {
                urlDownloads.append(urlDownload)
            } else {
                result.rejected.append((download, "only BAURLDownload downloads are supported"))
            }
        }
        let validation = DownloadRules.validate(urlDownloads.map(\.record), contentRequest: Int32(request.rawValue))
        let rejectedReasons = Dictionary(
            validation.rejected.map { ($0.download.uniqueIdentifier, $0.violation.reason) },
            uniquingKeysWith: { a, _ in a })
        for download in urlDownloads {
            if let reason = rejectedReasons[download.uniqueIdentifier] {
                result.rejected.append((download, reason))
            } else {
                result.downloads.append(download)
            }
        }
        return result
    }
}

extension BAExtensionRunResult {
    /// The accepted downloads as `BAURLDownload` values, sorted by identifier.
    public var urlDownloads: [BAURLDownload] {
        downloads.sorted { $0.identifier < $1.identifier }.compactMap { BAURLDownload(record: $0) }
    }
}
