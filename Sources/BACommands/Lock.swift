import ArgumentParser
import BADaemonProtocol

/// `ba lock`: the app group's exclusive-control lock.
struct Lock: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Inspect an app group's exclusive-control lock (BAAppExtensionInfo's exclusive control).",
        discussion: """
            Examples:
              ba lock status --app com.example.game
            """,
        subcommands: [LockStatus.self])
}

/// `ba lock status`: who holds an app's exclusive-control lock.
struct LockStatus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show whether an app's exclusive-control lock is held, by which pid, and the lock file.",
        discussion: """
            basd looks without taking the lock (it reads /proc/locks), so asking never makes the app or its \
            extension fail to take it. Exits 0 whether the lock is held or free.

            Examples:
              ba lock status --app com.example.game
              ba lock status --app com.example.game --json
            """)

    @OptionGroup var daemon: DaemonOptions

    @Option(help: "The app (its bundle identifier).")
    var app: String

    @Flag(help: "Print one JSON object: appIdentifier, appGroupIdentifier, lockPath, held, holderPID.")
    var json = false

    func run() throws {
        let session = try daemon.connect()
        let request = Request.lockStatus(app: app)
        let result = try session.call(request)
        guard case .lock(let lock) = result else { throw session.unexpected(result, to: request) }
        if json {
            print(jsonLine(lock))
            return
        }
        let state =
            lock.held ? "held by pid \(lock.holderPID.map(String.init) ?? "? (not visible from here)")" : "free"
        print("\(lock.appIdentifier): \(state)")
        var table = TextTable(["field", "value"])
        table.rows = [["app group", lock.appGroupIdentifier], ["lock file", lock.lockPath]]
        print(table.render(header: false, indent: "  "))
    }
}
