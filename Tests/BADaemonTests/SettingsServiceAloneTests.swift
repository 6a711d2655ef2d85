import BASettings
import BATestSupport
import Foundation
import Testing

@testable import BADaemon

/// The settings service built alone, from its file, the executor and the log: no
/// `BasdServices`. A fake delegate takes what it reports (what basd hands to the transfers and
/// the event router); the file and its folder's watch are real.
@Suite("the settings service on its own", .timeLimit(.minutes(1)))
struct SettingsServiceAloneTests {
    /// The settings each loaded edit reported (executor-confined).
    final class Reports: SettingsServiceDelegate, @unchecked Sendable {
        var loaded: [BasdSettings] = []
        func settingsService(_ service: SettingsService, loaded settings: BasdSettings) {
            loaded.append(settings)
        }
    }

    /// A settings service over `config.json` in a fresh folder, read once as basd reads it at start.
    final class Rig: Sendable {
        let directory: TemporaryDirectory
        let path: String
        let executor = ServiceExecutor()
        let reports = Reports()
        let service: SettingsService
        let log = LogInbox()

        init() throws {
            directory = try TemporaryDirectory()
            path = directory.path + "/config.json"
            var file = SettingsFile(path: path)
            _ = file.check()
            let log = log
            service = SettingsService(file: file, executor: executor, log: { log.append($0) })
            service.delegate = reports
        }

        /// Replaces the file (a new inode, as an editor saving does).
        func edit(_ json: String) throws {
            try Data(json.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        }

        func stop() {
            executor.sync { service.stop() }
            executor.stop()
            directory.remove()
        }
    }

    @Test("an edit is reported once with the new settings; no change and a bad edit report nothing")
    func editsReported() throws {
        let rig = try Rig()
        defer { rig.stop() }
        rig.executor.sync { rig.service.refresh(because: .schedulerLook) }
        #expect(rig.executor.sync { rig.reports.loaded }.isEmpty)

        try rig.edit(#"{ "backgroundDownloadConcurrency": 3 }"#)
        rig.executor.sync { rig.service.refresh(because: .schedulerLook) }
        rig.executor.sync { rig.service.refresh(because: .schedulerLook) }
        #expect(rig.executor.sync { rig.reports.loaded.map(\.backgroundDownloadConcurrency) } == [3])
        #expect(rig.log.count { $0.contains("loaded (the scheduler's look)") } == 1)

        try rig.edit(#"{ "backgroundDownloadConcurrency": "many" }"#)
        rig.executor.sync { rig.service.refresh(because: .schedulerLook) }
        #expect(rig.executor.sync { rig.reports.loaded.count } == 1)
        #expect(rig.executor.sync { rig.service.current.backgroundDownloadConcurrency } == 3)
        #expect(rig.log.count { $0.contains("ignoring the edit") } == 1)
    }

    @Test("watched, an edit of the file is reported without anyone asking")
    func watchedEditReported() async throws {
        let rig = try Rig()
        defer { rig.stop() }
        rig.executor.sync { rig.service.watch() }
        #expect(rig.log.count { $0.contains("not watching") } == 0)
        try rig.edit(#"{ "backgroundDownloadConcurrency": 5 }"#)
        let deadline = Date(timeIntervalSinceNow: 20)
        while rig.executor.sync({ rig.reports.loaded.isEmpty }) {
            guard Date() < deadline else { throw HarnessError("the edit was not reported: \(rig.log.all)") }
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(rig.executor.sync { rig.reports.loaded.map(\.backgroundDownloadConcurrency) } == [5])
        #expect(rig.log.count { $0.contains("loaded (the folder changed)") } == 1)
    }
}
