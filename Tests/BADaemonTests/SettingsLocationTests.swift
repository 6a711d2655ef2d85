import BATestSupport
import Foundation
import Testing

/// Where basd's settings live ($XDG_CONFIG_HOME, the old place with a notice) and that an edit
/// applies at once (inotify), not at the next scheduler tick (30 s with the defaults).
@Suite("basd's settings file", .timeLimit(.minutes(1)))
struct SettingsLocationTests {
    @Test("under $XDG_CONFIG_HOME, and an edit applies at once")
    func xdgAndInotify() async throws {
        let directory = try TemporaryDirectory()
        let folder = directory.path + "/config/background-assets"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // The scheduler's look comes every quarter of the minimum periodic interval: 1.5 h here,
        // so only the folder's watch can find the edit below.
        try Data(#"{"periodicMinimumIntervalSeconds": 21600}"#.utf8).write(
            to: URL(fileURLWithPath: folder + "/config.json"))
        let daemon = try await DaemonProcess.start(
            directory: directory, environment: ["XDG_CONFIG_HOME": directory.path + "/config"])
        defer { daemon.kill() }
        // Two edits, each written whole and renamed into place (as operations.md says), the second
        // once the first is in force. The scheduler's first look comes 50 ms after start and then
        // once a minute: it can take at most one of them (an edit made before it, on a busy
        // machine), so the other one shows the folder's watch applying an edit at once.
        for (count, concurrency) in [(1, 2), (2, 3)] {
            let text = #"{"periodicMinimumIntervalSeconds": 21600, "backgroundDownloadConcurrency": \#(concurrency)}"#
            try Data(text.utf8).write(to: URL(fileURLWithPath: folder + "/config.json.new"))
            #expect(rename(folder + "/config.json.new", folder + "/config.json") == 0)
            _ = try await CLIQueries.poll(
                "basd to load edit \(count)", daemon, timeout: 60, read: { daemon.standardError },
                until: { $0.components(separatedBy: "settings: \(folder)/config.json loaded").count - 1 == count })
        }
        // basd says which look found each edit (a wall-clock bound here failed on a busy machine).
        let log = daemon.standardError
        let byWatch = log.components(separatedBy: "config.json loaded (the folder changed)").count - 1
        let byLook = log.components(separatedBy: "config.json loaded (the scheduler's look)").count - 1
        #expect(byWatch >= 1 && byWatch + byLook == 2 && byLook <= 1, "not applied at once: \(log)")

        // A bad edit is refused, naming the key; the good settings stay.
        try Data(#"{"periodicMinimumIntervalSeconds": 21600, "backgroundDownloadConcurency": 3}"#.utf8).write(
            to: URL(fileURLWithPath: folder + "/config.json"))
        _ = try await CLIQueries.poll(
            "basd to refuse the bad edit", daemon, timeout: 10, read: { daemon.standardError },
            until: { $0.contains("did you mean \"backgroundDownloadConcurrency\"") })
    }

    @Test("a config.json left in the state folder is read, with a notice to move it")
    func oldPlace() async throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/state", withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: directory.path + "/state/config.json"))
        let daemon = try await DaemonProcess.start(
            directory: directory, environment: ["XDG_CONFIG_HOME": directory.path + "/config"])
        defer { daemon.kill() }
        _ = try await CLIQueries.poll(
            "the notice", daemon, timeout: 10, read: { daemon.standardError },
            until: { $0.contains("the old place; move it to \(directory.path)/config/background-assets/config.json") })
    }
}
