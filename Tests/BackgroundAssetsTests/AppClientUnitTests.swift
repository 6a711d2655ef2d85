import BACore
import BADaemonProtocol
import Foundation
import Testing

@testable import BackgroundAssets

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The app-side client's pieces that need no basd: identity, error mapping, the event filter,
/// challenges, and the in-process side of exclusive control.
@Suite struct AppClientUnitTests {
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ba-unit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func writePlist(
        _ object: [String: Any], to url: URL, format: PropertyListSerialization.PropertyListFormat
    )
        throws
    {
        try PropertyListSerialization.data(fromPropertyList: object, format: format, options: 0).write(to: url)
    }

    // MARK: Bundle identifier

    @Test func bundleIdentifierPrecedence() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let executable = directory.appendingPathComponent("bin/game").path
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("bin"), withIntermediateDirectories: true)
        func resolve(_ configured: String?, _ environment: [String: String]) throws -> String {
            try AppIdentity.resolveBundleIdentifier(
                configured: configured, environment: environment, executablePath: executable)
        }
        // The parent folder's Info.plist (an app directory with the binary in bin/), binary format.
        try Self.writePlist(
            ["CFBundleIdentifier": "com.example.parent"], to: directory.appendingPathComponent("Info.plist"),
            format: .binary)
        #expect(try resolve(nil, [:]) == "com.example.parent")
        // The executable's own folder wins over its parent; XML format.
        try Self.writePlist(
            ["CFBundleIdentifier": "com.example.beside"], to: directory.appendingPathComponent("bin/Info.plist"),
            format: .xml)
        #expect(try resolve(nil, [:]) == "com.example.beside")
        #expect(try resolve(nil, ["BA_BUNDLE_IDENTIFIER": "com.example.env"]) == "com.example.env")
        #expect(
            try resolve("com.example.configured", ["BA_BUNDLE_IDENTIFIER": "com.example.env"])
                == "com.example.configured")
        #expect(try resolve("", ["BA_BUNDLE_IDENTIFIER": ""]) == "com.example.beside")
    }

    @Test func missingOrBrokenBundleIdentifierSaysHowToFixIt() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let executable = directory.appendingPathComponent("game").path
        func failure() -> BAError? {
            do {
                _ = try AppIdentity.resolveBundleIdentifier(
                    configured: nil, environment: [:], executablePath: executable)
                return nil
            } catch {
                return error
            }
        }
        let missing = try #require(failure())
        #expect(missing.code == .callerConnectionNotAccepted)
        #expect(missing.reason.contains("baConfigure(bundleIdentifier:)"))
        #expect(missing.reason.contains("BA_BUNDLE_IDENTIFIER"))
        #expect(missing.reason.contains(directory.appendingPathComponent("Info.plist").path))

        try Self.writePlist(["CFBundleName": "Game"], to: directory.appendingPathComponent("Info.plist"), format: .xml)
        #expect(try #require(failure()).reason.contains("has no CFBundleIdentifier"))
        try Data("not a plist".utf8).write(to: directory.appendingPathComponent("Info.plist"))
        #expect(try #require(failure()).reason.contains("is not a readable property list"))
    }

    // MARK: Errors

    @Test func daemonErrorsBecomeBAErrors() {
        let duplicate = AppDaemonConnection.map(DaemonClientError(code: 100, message: "already scheduled"))
        #expect(duplicate == BAError(.downloadAlreadyScheduled, reason: "already scheduled"))
        #expect(AppDaemonConnection.map(DaemonClientError(code: 101, message: "m")).code == .downloadNotScheduled)
        #expect(AppDaemonConnection.map(DaemonClientError(code: 55, message: "m")).code == .callerConnectionNotAccepted)
        let old = AppDaemonConnection.map(DaemonClientError(code: 1003, message: "not served"))
        #expect(old.code == .callerConnectionNotAccepted)
        #expect(old.reason == "basd error 1003: not served")
        #expect(
            AppDaemonConnection.map(DaemonClientError(code: 1002, message: "m")).code == .callerConnectionNotAccepted)
        #expect(AppDaemonConnection.map(DaemonClientError(code: 1001, message: "m")).code == .callerConnectionInvalid)
        #expect(AppDaemonConnection.map(DaemonClientError(code: 1004, message: "m")).code == .callerConnectionInvalid)
    }

    @Test func failedEventsBecomeBAErrorsOrNSErrors() {
        let ba = AppEventDelivery.error(domain: BAErrorDomain, code: 202, message: "not allowed")
        #expect(ba as? BAError == BAError(.sessionDownloadDisallowedByDomain, reason: "not allowed"))
        let url = AppEventDelivery.error(domain: NSURLErrorDomain, code: -1011, message: "bad response") as NSError
        #expect(url.domain == NSURLErrorDomain)
        #expect(url.code == -1011)
        #expect(url.localizedDescription == "bad response")
    }

    @Test func noSocketGives55NamingIt() throws {
        let connection = AppDaemonConnection(delegate: { nil })
        let socket = "/nonexistent-\(UUID().uuidString)/basd.sock"
        connection.configure(bundleIdentifier: "com.example.game", socketPath: socket)
        #expect {
            try connection.currentDownloads()
        } throws: { error in
            guard let error = error as? BAError else { return false }
            return error.code == .callerConnectionNotAccepted && error.reason.contains(socket)
        }
    }

    // MARK: Event filter

    static func event(
        _ sequence: Int64, _ kind: DownloadEvent.Kind, id: String = "u1", bytes: Int64? = nil, total: Int64? = nil,
        offset: Int64? = nil
    ) -> DownloadEvent {
        let change: DownloadChange =
            switch kind {
            case .began: .began(offset: offset ?? 0, isForeground: false)
            case .paused: .paused(bytesOnDisk: bytes ?? 0)
            case .progress: .progress(bytesWritten: bytes ?? 0, totalBytes: total)
            case .finished: .finished(destination: "/c/file", size: bytes ?? 0)
            case .failed: .failed(domain: "d", code: 1, message: "m")
            case .needsCredentials: .needsCredentials(challenge: "Basic")
            case .waiting: .waiting(reason: "Couldn't connect to server", retryAt: 1_800_000_000_000, attempt: 1)
            }
        return DownloadEvent(sequence: sequence, downloadUniqueIdentifier: id, identifier: "x", change: change)
    }

    /// basd sends `waiting` only to CLI observers; should one reach an app, its delegate hears nothing
    /// (Apple's delegate has no such callback).
    @Test func aWaitingEventIsNotForTheDelegate() {
        var filter = AppEventFilter()
        #expect(filter.decide(Self.event(0, .waiting)) == .skip)
    }

    @Test func durableEventsAreDeliveredOnceInOrder() {
        var filter = AppEventFilter()
        #expect(filter.decide(Self.event(1, .began)) == .began)
        #expect(filter.decide(Self.event(2, .paused)) == .paused)
        // A reconnect redelivers everything not acknowledged: all duplicates now.
        #expect(filter.decide(Self.event(1, .began)) == .duplicate)
        #expect(filter.decide(Self.event(2, .paused)) == .duplicate)
        #expect(filter.decide(Self.event(3, .began)) == .began)
        // Transient progress (sequence 0) is never a duplicate.
        #expect(
            filter.decide(Self.event(0, .progress, bytes: 10, total: 100))
                == .progress(bytesWritten: 10, totalBytesWritten: 10, totalBytesExpectedToWrite: 100))
        #expect(filter.highestDelivered == 3)
    }

    @Test func progressBecomesDeltas() {
        var filter = AppEventFilter()
        #expect(filter.decide(Self.event(1, .began, offset: 0)) == .began)
        #expect(
            filter.decide(Self.event(0, .progress, bytes: 100, total: 1000))
                == .progress(bytesWritten: 100, totalBytesWritten: 100, totalBytesExpectedToWrite: 1000))
        #expect(
            filter.decide(Self.event(2, .progress, bytes: 350, total: 1000))
                == .progress(bytesWritten: 250, totalBytesWritten: 350, totalBytesExpectedToWrite: 1000))
        // No new bytes: nothing to say.
        #expect(filter.decide(Self.event(0, .progress, bytes: 350, total: 1000)) == .skip)
        // Other downloads keep their own totals; an unknown size is -1.
        #expect(
            filter.decide(Self.event(0, .progress, id: "u2", bytes: 5))
                == .progress(bytesWritten: 5, totalBytesWritten: 5, totalBytesExpectedToWrite: -1))
        // The total went down (a restart into a fresh file): count from zero again.
        #expect(
            filter.decide(Self.event(0, .progress, bytes: 40, total: 1000))
                == .progress(bytesWritten: 40, totalBytesWritten: 40, totalBytesExpectedToWrite: 1000))
        // A resume at an offset counts only what this run writes.
        #expect(filter.decide(Self.event(3, .began, offset: 600)) == .began)
        #expect(
            filter.decide(Self.event(0, .progress, bytes: 700, total: 1000))
                == .progress(bytesWritten: 100, totalBytesWritten: 700, totalBytesExpectedToWrite: 1000))
        let finished = Self.event(4, .finished)
        #expect(filter.decide(finished) == .finished(path: "/c/file"))
        #expect(filter.lastTotals["u1"] == nil)
    }

    @Test func eventsCarryTheirDownload() throws {
        var event = Self.event(5, .finished)
        #expect(AppEventDelivery.download(for: event) == nil, "no payload, no download")
        event.download = DownloadDescription(
            identifier: "level-1", uniqueIdentifier: "U-1", url: "https://cdn.example.com/l1",
            headers: [.init(name: "Authorization", value: "Bearer t")], applicationGroupIdentifier: "group.g",
            priority: 100, isEssential: true, fileSize: 42, sha256: "ab")
        event.downloadUniqueIdentifier = "U-1"
        let download = try #require(AppEventDelivery.download(for: event))
        #expect(download.identifier == "level-1")
        #expect(download.uniqueIdentifier == "U-1")
        #expect(download.state == .finished)
        #expect(download.priority == .max)
        #expect(download.isEssential)
        #expect(download.applicationGroupIdentifier == "group.g")
        #expect(download.fileSize == 42)
        #expect(download.request.url?.absoluteString == "https://cdn.example.com/l1")
        #expect(download.request.value(forHTTPHeaderField: "Authorization") == "Bearer t")
    }

    @Test func challengesAreBuiltFromWWWAuthenticate() {
        let basic = AppEventDelivery.authenticationChallenge(
            #"Basic realm="assets", charset="UTF-8""#, url: URL(string: "http://127.0.0.1:8080/a"))
        #expect(basic.protectionSpace.realm == "assets")
        #expect(basic.protectionSpace.authenticationMethod == NSURLAuthenticationMethodHTTPBasic)
        #expect(basic.protectionSpace.host == "127.0.0.1")
        #expect(basic.protectionSpace.port == 8080)
        let other = AppEventDelivery.authenticationChallenge("Bearer", url: URL(string: "https://cdn.example.com/a"))
        #expect(other.protectionSpace.realm == nil)
        #expect(other.protectionSpace.authenticationMethod == NSURLAuthenticationMethodDefault)
        #expect(other.protectionSpace.port == 443)
    }

    // MARK: Exclusive control

    @Test func exclusiveControlExcludesThreadsAndOtherOpenFiles() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let mine = AppExclusiveControl()
        let other = AppExclusiveControl()  // its own open file: as another process would hold it
        try mine.acquire(containerPath: directory.path, deadline: nil)
        // Another thread of this process, and another open file of the lock: both refused at once.
        #expect(throws: BAError.self) { try mine.acquire(containerPath: directory.path, deadline: Date()) }
        #expect(throws: BAError.self) { try other.acquire(containerPath: directory.path, deadline: Date()) }
        mine.release()
        try other.acquire(containerPath: directory.path, deadline: Date())
        #expect(throws: BAError.self) {
            try mine.acquire(containerPath: directory.path, deadline: Date(timeIntervalSinceNow: 0.05))
        }
        other.release()
        try mine.acquire(containerPath: directory.path, deadline: Date())
        mine.release()
        #expect(FileManager.default.fileExists(atPath: directory.path + "/.background-assets-exclusive-control.lock"))
    }

    // MARK: App group container

    @Test func extensionSideContainerComesFromTheEnvironmentWhenTheGroupMatches() {
        let group = "group.com.example.game"
        let container = "/home/u/.local/share/background-assets/groups/" + group
        #expect(AppGroupContainer.path(forGroup: group, environmentValue: container) == container)
        #expect(AppGroupContainer.path(forGroup: group, environmentValue: container + "/") == container)
        #expect(AppGroupContainer.path(forGroup: "group.other", environmentValue: container) == nil)
        #expect(AppGroupContainer.path(forGroup: "", environmentValue: container) == nil)
        #expect(AppGroupContainer.path(forGroup: group, environmentValue: "") == nil)
        #expect(AppGroupContainer.path(forGroup: "game", environmentValue: "/x/group.com.example.game") == nil)
    }

    @Test func appSideContainerMatchesTheGroupBasdNamed() {
        let container = "/state/groups/group.a"
        #expect(AppDaemonConnection.container(container, ofGroup: "group.a", matches: "group.a") == container)
        #expect(AppDaemonConnection.container(container, ofGroup: "group.a", matches: "group.b") == nil)
        // No group in the welcome (an older basd): the folder name is the group.
        #expect(AppDaemonConnection.container(container, ofGroup: nil, matches: "group.a") == container)
        #expect(AppDaemonConnection.container(container, ofGroup: nil, matches: "group.b") == nil)
    }
}

/// `containerURL(forSecurityApplicationGroupIdentifier:)` with basd down: the app's Info.plist and
/// basd's default state folder.
@Suite struct OfflineContainerTests {
    @Test("the app's own group in the default state folder; another group, no plist or no folder: nil")
    func offlinePath() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ba-offline-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let state = directory.appendingPathComponent("state").path
        let container = state + "/groups/group.com.example.game"
        try FileManager.default.createDirectory(atPath: container, withIntermediateDirectories: true)
        let plist = directory.appendingPathComponent("Info.plist").path
        try PropertyListSerialization.data(
            fromPropertyList: ["CFBundleIdentifier": "com.example.game", "BAAppGroupID": "group.com.example.game"],
            format: .xml, options: 0
        ).write(to: URL(fileURLWithPath: plist))
        let environment = ["BA_STATE_DIR": state]
        #expect(
            AppGroupContainer.offlinePath(
                forGroup: "group.com.example.game", environment: environment, infoPlists: ["/nonexistent", plist])
                == container)
        #expect(
            AppGroupContainer.offlinePath(forGroup: "group.other", environment: environment, infoPlists: [plist]) == nil
        )
        #expect(
            AppGroupContainer.offlinePath(forGroup: "group.com.example.game", environment: environment, infoPlists: [])
                == nil)
        #expect(
            AppGroupContainer.offlinePath(
                forGroup: "group.com.example.game", environment: ["BA_STATE_DIR": state + "-none"], infoPlists: [plist])
                == nil)
    }
}
