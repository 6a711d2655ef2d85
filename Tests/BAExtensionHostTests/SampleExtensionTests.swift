import BACore
import BAExclusiveControl
import BAExtensionHost
import BATestSupport
import Foundation
import Testing

/// The sample extensions' catalog scenario, entry point by entry point, in a runner as basd runs
/// them: finished files end in `CONTAINER/Assets/<identifier>` under exclusive control, the
/// catalog schedules what is missing, a failed essential download comes back non-essential. The
/// Swift and the C sample must do exactly the same.
@Suite struct SampleExtensionTests {
    static let libraries = ["SampleSwiftExtension", "SampleCExtension"]
    static let group = "group.com.example.ba.sample"
    let supervisor: BAExtensionSupervisor

    init() throws {
        supervisor = try BAExtensionSupervisor(runnerPath: BuildProducts.executable("ba-extension-runner"))
    }

    /// An app group container laid out as basd's: `DIR/groups/<group>`.
    struct Container {
        let directory: TemporaryDirectory
        let path: String
        var assets: String { path + "/Assets" }

        init(group: String = SampleExtensionTests.group) throws {
            directory = try TemporaryDirectory()
            path = directory.path + "/groups/" + group
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }

        /// A finished file, delivered inside the container as basd delivers it.
        func deliver(_ contents: String) throws -> String {
            let file = path + "/delivered-\(UUID().uuidString)"
            try Data(contents.utf8).write(to: URL(fileURLWithPath: file))
            return file
        }

        func contents(_ identifier: String) -> String? {
            (try? Data(contentsOf: URL(fileURLWithPath: assets + "/" + identifier))).map {
                String(decoding: $0, as: UTF8.self)
            }
        }

        func remove() { directory.remove() }
    }

    static func download(
        _ identifier: String, url: String = "https://cdn.example.com/games/sample/catalog.json",
        group: String? = SampleExtensionTests.group, essential: Bool = false, fileSize: Int64 = 0, sha256: String? = nil
    ) -> DownloadDescription {
        DownloadDescription(
            identifier: identifier, uniqueIdentifier: "u-\(identifier)", url: url, applicationGroupIdentifier: group,
            priority: 70, isEssential: essential, fileSize: fileSize, sha256: sha256, state: .finished)
    }

    func finished(
        _ library: String, _ download: DownloadDescription, file: String, container: Container?,
        current: [DownloadDescription] = [], timeout: Duration = .seconds(30)
    ) async throws -> BAExtensionRunResult {
        try await supervisor.run(
            BAExtensionInvocation(
                libraryPath: BuildProducts.library(library), event: .finished(download, filePath: file),
                timeout: timeout, appGroupContainerPath: container?.path, currentDownloads: current))
    }

    /// What the tests compare of a scheduled download.
    static func summary(_ record: DownloadDescription) -> String {
        "\(record.identifier) \(record.url) size=\(record.fileSize) priority=\(record.priority) "
            + "essential=\(record.isEssential) group=\(record.applicationGroupIdentifier ?? "-") sha256=\(record.sha256 ?? "-")"
    }

    @Test(arguments: libraries)
    func finishedFileMovesIntoAssetsReplacingAnOlderOne(library: String) async throws {
        let container = try Container()
        defer { container.remove() }
        for version in ["first", "second"] {
            let file = try container.deliver("level two, \(version) version")
            let result = try await finished(library, Self.download("level-2"), file: file, container: container)
            #expect(result.verdict == .ok, "\(library): \(result.verdict) \(result.output)")
            #expect(container.contents("level-2") == "level two, \(version) version", "\(library)")
            #expect(!FileManager.default.fileExists(atPath: file), "\(library): the delivered file was moved")
            let log = result.logs.map(\.message)
            #expect(log.contains("\(library): finished level-2 at \(file)"), "\(log)")
            #expect(log.contains("\(library): moved level-2 to \(container.assets)/level-2"), "\(log)")
            #expect(result.scheduled.isEmpty)
        }
    }

    @Test func theCatalogSchedulesWhatIsMissingWithResolvedURLs() async throws {
        let sha = String(repeating: "ab", count: 32)
        let catalog = """
            {"title": "Sample catalog", "assets": [
              {"identifier": "have", "url": "levels/have.pak"},
              {"identifier": "queued", "url": "levels/queued.pak"},
              {"identifier": "level-2", "url": "levels/level-2.pak", "fileSize": 4194304, "sha256": "\(sha)", "priority": 10},
              {"identifier": "up", "url": "../shared/up.bin"},
              {"identifier": "root", "url": "/root.bin?v=2"},
              {"identifier": "elsewhere", "url": "https://other.example.com/e.bin", "fileSize": 5},
              {"url": "levels/nameless.pak"}
            ]}
            """
        let expected = [
            "level-2 https://cdn.example.com/games/sample/levels/level-2.pak size=4194304 priority=10 essential=false group=\(Self.group) sha256=\(sha)",
            "up https://cdn.example.com/games/shared/up.bin size=0 priority=50 essential=false group=\(Self.group) sha256=-",
            "root https://cdn.example.com/root.bin?v=2 size=0 priority=50 essential=false group=\(Self.group) sha256=-",
            "elsewhere https://other.example.com/e.bin size=5 priority=50 essential=false group=\(Self.group) sha256=-",
        ]
        for library in Self.libraries {
            let container = try Container()
            defer { container.remove() }
            try FileManager.default.createDirectory(atPath: container.assets, withIntermediateDirectories: true)
            try Data("already here".utf8).write(to: URL(fileURLWithPath: container.assets + "/have"))
            let queued = DownloadDescription(
                identifier: "queued", uniqueIdentifier: "u-q", url: "https://cdn.example.com/q", state: .downloading)
            let result = try await finished(
                library, Self.download("catalog"), file: try container.deliver(catalog), container: container,
                current: [queued])
            #expect(result.verdict == .ok, "\(library): \(result.verdict) \(result.output)")
            #expect(container.contents("catalog") == catalog, "\(library)")
            #expect(result.scheduled.map(Self.summary) == expected, "\(library)")
            let log = result.logs.map(\.message)
            #expect(log.contains("\(library): scheduled 4 assets from the catalog"), "\(library): \(log)")
            #expect(log.contains("\(library): catalog asset 6 has no identifier or url; skipped"), "\(library): \(log)")
        }
    }

    @Test func aCatalogThatIsNotJSONSchedulesNothing() async throws {
        for library in Self.libraries {
            let container = try Container()
            defer { container.remove() }
            let result = try await finished(
                library, Self.download("catalog"), file: try container.deliver("{\"assets\": [}"), container: container)
            #expect(result.verdict == .ok, "\(library): \(result.verdict) \(result.output)")
            #expect(result.scheduled.isEmpty, "\(library)")
            let log = result.logs.map(\.message)
            #expect(
                log.contains { $0.hasPrefix("\(library): cannot read the catalog \(container.assets)/catalog: ") },
                "\(library): \(log)")
        }
    }

    @Test func aFailedEssentialDownloadIsRequeuedNonEssential() async throws {
        let sha = String(repeating: "cd", count: 32)
        for library in Self.libraries {
            let essential = Self.download(
                "level-1", url: "https://cdn.example.com/levels/level-1.pak", essential: true, fileSize: 1_048_576,
                sha256: sha)
            let error = ErrorRecord(domain: "NSURLErrorDomain", code: -1011, message: "the server answered 404")
            let result = try await supervisor.run(
                BAExtensionInvocation(libraryPath: BuildProducts.library(library), event: .failed(essential, error)))
            #expect(result.verdict == .ok, "\(library): \(result.verdict) \(result.output)")
            #expect(
                result.scheduled.map(Self.summary) == [
                    "level-1 https://cdn.example.com/levels/level-1.pak size=1048576 priority=70 essential=false group=\(Self.group) sha256=\(sha)"
                ], "\(library)")
            let log = result.logs.map(\.message)
            #expect(log.contains("\(library): failed level-1: the server answered 404 (code -1011)"), "\(log)")
            #expect(log.contains("\(library): re-queued level-1 as a non-essential download"), "\(log)")

            // A non-essential download that failed stays failed.
            let other = try await supervisor.run(
                BAExtensionInvocation(
                    libraryPath: BuildProducts.library(library), event: .failed(Self.download("extra"), error)))
            #expect(other.verdict == .ok)
            #expect(other.scheduled.isEmpty, "\(library)")
        }
    }

    @Test(arguments: libraries)
    func withoutTheGroupsContainerTheFileIsNotKept(library: String) async throws {
        let container = try Container(group: "group.someone.else")
        defer { container.remove() }
        for target in [container, nil] as [Container?] {
            let file = try container.deliver("x")
            let result = try await finished(library, Self.download("level-2"), file: file, container: target)
            #expect(result.verdict == .ok, "\(library): \(result.verdict) \(result.output)")
            #expect(FileManager.default.fileExists(atPath: file), "\(library): left where it was")
            #expect(container.contents("level-2") == nil)
            let log = result.logs.map(\.message)
            #expect(
                log.contains("\(library): no app group container for \"\(Self.group)\"; level-2 is not kept"),
                "\(library): \(log)")
        }
    }

    @Test(arguments: libraries)
    func theMoveWaitsForExclusiveControl(library: String) async throws {
        let container = try Container()
        defer { container.remove() }
        let file = try container.deliver("level two")
        let lock = try ExclusiveControlLock(path: ExclusiveControlLock.path(inContainer: container.path))
        try lock.acquire(timeoutMilliseconds: 0)
        // Held by this process: the extension waits for it until its deadline, and moves nothing.
        let blocked = try await finished(
            library, Self.download("level-2"), file: file, container: container, timeout: .seconds(1))
        #expect(blocked.verdict == .timedOut, "\(library): \(blocked.verdict) \(blocked.output)")
        #expect(FileManager.default.fileExists(atPath: file))
        #expect(container.contents("level-2") == nil)
        try lock.release()
        let result = try await finished(library, Self.download("level-2"), file: file, container: container)
        #expect(result.verdict == .ok, "\(library): \(result.verdict) \(result.output)")
        #expect(container.contents("level-2") == "level two")
    }
}
