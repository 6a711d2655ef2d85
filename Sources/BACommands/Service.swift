import ArgumentParser
import Foundation

/// `ba service`: basd as a systemd user service, started by its socket.
struct Service: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Install, remove or inspect basd's systemd user units (basd.service, basd.socket, basd.timer).",
        discussion: """
            The units go into $XDG_CONFIG_HOME/systemd/user (default ~/.config/systemd/user). basd.socket \
            owns basd's socket (%t/background-assets/basd.sock, the path ba uses by default) and passes it to \
            basd; basd.service runs the basd next to this ba. See docs/operations.md.

            Examples:
              ba service install
              ba service status
              ba service uninstall
            """,
        subcommands: [ServiceInstall.self, ServiceUninstall.self, ServiceStatus.self])
}

/// Where the unit files are and whether to call `systemctl`, shared by the `ba service` commands.
struct ServiceOptions: ParsableArguments {
    @Option(
        name: .customLong("unit-directory"),
        help: ArgumentHelp(
            "Where the unit files are (default: $XDG_CONFIG_HOME/systemd/user, else ~/.config/systemd/user).",
            valueName: "dir"))
    var unitDirectory: String?

    @Flag(name: .customLong("no-systemctl"), help: "Do not run systemctl; print what to run instead.")
    var noSystemctl = false

    func validate() throws { try checkPath(unitDirectory, flag: "--unit-directory") }

    /// The unit directory, absolute.
    var directory: String {
        if let unitDirectory { return absolutePath(unitDirectory) }
        let environment = ProcessInfo.processInfo.environment
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return config + "/systemd/user" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.config/systemd/user"
    }

    /// The path of the unit file `name`.
    func path(of name: String) -> String { directory + "/" + name }

    /// `systemctl`, unless `--no-systemctl` was given or it is not on `PATH`.
    var systemctl: Systemctl? { noSystemctl ? nil : Systemctl.find() }

    /// Why `systemctl` is not run, for the line before the commands to run by hand.
    var whyNoSystemctl: String { noSystemctl ? "--no-systemctl was given" : "systemctl was not found on PATH" }

    /// What is at each unit's path.
    func states() -> [(name: String, path: String, state: UnitFileState)] {
        ServiceUnits.names.map { name in (name, path(of: name), UnitFileState.at(path(of: name))) }
    }

    /// Prints that `path` is someone else's file and returns exit code 40.
    static func foreign(_ path: String, _ why: String, doing: String) -> ExitCode {
        printError(
            "\(path) \(why), so it was not written by `ba service install`; \(doing). Move it away (or delete it) yourself if basd should be run by ba's units."
        )
        return ExitCode(BAExitCode.foreignUnitFile.rawValue)
    }
}

/// What is at a unit file's path.
enum UnitFileState: Equatable {
    case missing
    /// A file `ba service install` wrote; its contents.
    case ours(String)
    /// Anything else there, and what it is.
    case foreign(String)

    static func at(_ path: String) -> UnitFileState {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            return errno == ENOENT ? .missing : .foreign("cannot be examined (\(String(cString: strerror(errno))))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            return .foreign((info.st_mode & S_IFMT) == S_IFLNK ? "is a symbolic link" : "is not a regular file")
        }
        guard let data = FileManager.default.contents(atPath: path) else { return .foreign("cannot be read") }
        let contents = String(decoding: data, as: UTF8.self)
        return ServiceUnits.isOurs(contents) ? .ours(contents) : .foreign("has no `ba service` marker line")
    }
}

/// `systemctl --user`, run as a child process.
struct Systemctl {
    /// The executable.
    let path: String

    /// `systemctl` on `PATH`, or nil.
    static func find() -> Systemctl? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin")
            .split(separator: ":")
        for directory in directories where !directory.isEmpty {
            let candidate = "\(directory)/systemctl"
            if access(candidate, X_OK) == 0 { return Systemctl(path: candidate) }
        }
        return nil
    }

    /// How a person types `systemctl --user ARGUMENTS`.
    static func commandLine(_ arguments: [String]) -> String {
        (["systemctl", "--user"] + arguments).joined(separator: " ")
    }

    /// Runs `systemctl --user arguments…`; its exit status (-1 if it could not start), stdout and stderr.
    func run(_ arguments: [String]) -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["--user"] + arguments
        process.standardInput = FileHandle.nullDevice
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        do {
            try process.run()
        } catch {
            return (-1, "", "cannot run \(path): \(error.localizedDescription)")
        }
        // Both pipes drained at once: a child blocked on a full pipe would never exit.
        nonisolated(unsafe) var errData = Data()
        let drained = DispatchSemaphore(value: 0)
        Thread {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            drained.signal()
        }.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        drained.wait()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: outData, as: UTF8.self),
            String(decoding: errData, as: UTF8.self)
        )
    }
}

/// `ba service install`: writes the units and starts the socket and basd.
struct ServiceInstall: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Write basd.service, basd.socket and basd.timer, then enable and start them with systemctl --user.",
        discussion: """
            ExecStart= is the basd next to this ba (or --basd), with --state-dir if given (else basd's default, \
            $XDG_DATA_HOME/background-assets as systemd's user manager sees it). A unit file that ba did not \
            write is never overwritten (exit 40). Then, unless --no-systemctl is given or systemctl is missing, \
            runs `systemctl --user daemon-reload` and `systemctl --user enable --now basd.socket basd.timer basd.service`; \
            otherwise prints them. Exit codes: 0 done, 40 a foreign unit file is in the way, 41 systemctl \
            failed (the units are written), 64 usage, 66 no executable basd, 73 the units cannot be written.

            Examples:
              ba service install
              ba service install --state-dir /srv/assets/state
              ba service install --print
              ba service install --unit-directory /tmp/units --no-systemctl
            """)

    @OptionGroup var options: ServiceOptions

    @Option(
        help: ArgumentHelp("The basd to run (default: the basd next to this ba).", valueName: "path"))
    var basd: String?

    @Option(
        name: .customLong("state-dir"),
        help: ArgumentHelp("basd's --state-dir (default: basd's own default).", valueName: "dir"))
    var stateDirectory: String?

    @Flag(help: "Print the unit files to stdout; write nothing and run nothing.")
    var print = false

    func validate() throws {
        try checkPath(basd, flag: "--basd")
        try checkPath(stateDirectory, flag: "--state-dir")
    }

    func run() throws {
        let units = ServiceUnits(basdPath: try basdPath(), stateDirectory: stateDirectory.map(absolutePath))
        if print {
            let text = ServiceUnits.names.map { "# \(options.path(of: $0))\n" + units.contents(of: $0) }
            Swift.print(text.joined(separator: "\n"), terminator: "")
            return
        }
        let states = options.states()
        for (_, path, state) in states {
            if case .foreign(let why) = state {
                throw ServiceOptions.foreign(path, why, doing: "nothing was written")
            }
        }
        // A running basd keeps its old ExecStart= (enable --now does not restart it): say so.
        let changed = states.contains { name, _, state in
            if case .ours(let old) = state { old != units.contents(of: name) } else { false }
        }
        let directory = options.directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            printError("cannot create the unit directory \(directory): \(error.localizedDescription)")
            throw ExitCode(BAExitCode.cannotWrite.rawValue)
        }
        for name in ServiceUnits.names {
            let path = options.path(of: name)
            do {
                // Atomic (a temporary file renamed over it): systemd never reads half a unit.
                try Data(units.contents(of: name).utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            } catch {
                printError("cannot write \(path): \(error.localizedDescription)")
                throw ExitCode(BAExitCode.cannotWrite.rawValue)
            }
            Swift.print("wrote \(path)")
        }
        Swift.print("  ExecStart=\(units.execStart)")
        if changed {
            Swift.print("the units changed: if basd is running, restart it: systemctl --user restart basd.service")
        }
        let steps = [["daemon-reload"], ["enable", "--now"] + ServiceUnits.enabled.map(\.0)]
        guard let systemctl = options.systemctl else {
            Swift.print("\(options.whyNoSystemctl); to start basd now and at every login, run:")
            for step in steps { Swift.print("  \(Systemctl.commandLine(step))") }
            printLingerHint()
            return
        }
        for (index, step) in steps.enumerated() {
            Swift.print("running \(Systemctl.commandLine(step))")
            let result = systemctl.run(step)
            FileHandle.standardError.write(Data((result.stdout + result.stderr).utf8))
            guard result.status == 0 else {
                printError(
                    "`\(Systemctl.commandLine(step))` failed (exit \(result.status)); the units are written. "
                        + "Once systemd runs your user session, run:\n"
                        + steps[index...].map { "  \(Systemctl.commandLine($0))" }.joined(separator: "\n"))
                throw ExitCode(BAExitCode.systemctlFailed.rawValue)
            }
        }
        Swift.print(
            "basd.socket, basd.timer and basd.service are enabled and started (check: ba service status, ba status)")
        printLingerHint()
    }

    /// The absolute path of an executable basd; exit 66 when there is none.
    private func basdPath() throws -> String {
        let path: String
        if let basd {
            path = absolutePath(basd)
        } else {
            let executable =
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0]
            path = (absolutePath(executable) as NSString).deletingLastPathComponent + "/basd"
        }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, access(path, X_OK) == 0 else {
            let hint = basd == nil ? " next to this ba; pass --basd PATH" : ""
            printError("no executable basd at \(path)\(hint)")
            throw ExitCode(BAExitCode.noInput.rawValue)
        }
        return path
    }

    private func printLingerHint() {
        let user = ProcessInfo.processInfo.environment["USER"] ?? "$USER"
        Swift.print("to keep basd running while you are logged out: loginctl enable-linger \(user)")
    }
}

/// `ba service uninstall`: stops and disables the units and removes the files `install` wrote.
struct ServiceUninstall: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uninstall",
        abstract: "Stop and disable basd's units, and remove the unit files ba service install wrote.",
        discussion: """
            Runs `systemctl --user disable --now basd.socket basd.timer basd.service` (unless --no-systemctl is given or \
            systemctl is missing), removes basd.service, basd.socket, basd.timer and their .wants links, then runs \
            `systemctl --user daemon-reload`. A unit file without ba's marker line is someone else's: nothing \
            is stopped or removed (exit 40). basd's state directory is kept. Exit codes: 0 done (also when \
            nothing was installed), 40 a foreign unit file, 41 systemctl failed (the files are removed), 64 \
            usage, 73 a file cannot be removed.

            Examples:
              ba service uninstall
              ba service uninstall --unit-directory /tmp/units --no-systemctl
            """)

    @OptionGroup var options: ServiceOptions

    func run() throws {
        let states = options.states()
        for (_, path, state) in states {
            if case .foreign(let why) = state {
                throw ServiceOptions.foreign(path, why, doing: "nothing was stopped or removed")
            }
        }
        let installed = states.filter { $0.state != .missing }
        guard !installed.isEmpty else {
            print("no basd units in \(options.directory); nothing to remove")
            return
        }
        let systemctl = options.systemctl
        var failed: [[String]] = []
        let disable = ["disable", "--now"] + ServiceUnits.enabled.map(\.0)
        if let systemctl {
            print("running \(Systemctl.commandLine(disable))")
            let result = systemctl.run(disable)
            FileHandle.standardError.write(Data((result.stdout + result.stderr).utf8))
            if result.status != 0 { failed.append(disable) }
        }
        // What `disable` removes; done here too, so no dangling link is left when systemctl was not run.
        for (name, target) in ServiceUnits.enabled {
            let link = "\(options.directory)/\(target).wants/\(name)"
            if let destination = try? FileManager.default.destinationOfSymbolicLink(atPath: link),
                destination == options.path(of: name)
            {
                unlink(link)
            }
        }
        for (_, path, _) in installed {
            guard unlink(path) == 0 || errno == ENOENT else {
                printError("cannot remove \(path): \(String(cString: strerror(errno)))")
                throw ExitCode(BAExitCode.cannotWrite.rawValue)
            }
            print("removed \(path)")
        }
        let reload = ["daemon-reload"]
        guard let systemctl else {
            print("\(options.whyNoSystemctl); if systemd still runs basd's units, run:")
            for step in [disable, reload] { print("  \(Systemctl.commandLine(step))") }
            return
        }
        print("running \(Systemctl.commandLine(reload))")
        let result = systemctl.run(reload)
        FileHandle.standardError.write(Data((result.stdout + result.stderr).utf8))
        if result.status != 0 { failed.append(reload) }
        guard failed.isEmpty else {
            printError(
                "systemctl failed; the unit files are removed. Once systemd runs your user session, run:\n"
                    + failed.map { "  \(Systemctl.commandLine($0))" }.joined(separator: "\n"))
            throw ExitCode(BAExitCode.systemctlFailed.rawValue)
        }
    }
}

/// `ba service status`: where the units are, whether they are installed, whether they run.
struct ServiceStatus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show where basd's unit files are, whether they are installed, and whether systemd runs them.",
        discussion: """
            A unit file is `installed` (written by ba service install), `missing`, or `foreign` (someone \
            else's). With systemctl (and without --no-systemctl) it also shows `systemctl --user is-active` \
            of each unit. Exits 0 whatever the state.

            Examples:
              ba service status
              ba service status --json
            """)

    @OptionGroup var options: ServiceOptions

    @Flag(help: "Print one JSON object: unitDirectory, units (name, path, state, detail, active), systemctl.")
    var json = false

    /// `--json`'s object.
    struct Report: Encodable {
        struct Unit: Encodable {
            var name: String
            var path: String
            var state: String
            var detail: String?
            var active: String?
        }
        var unitDirectory: String
        var units: [Unit]
        var systemctl: String
    }

    func run() throws {
        var units = options.states().map { name, path, state in
            switch state {
            case .missing:
                Report.Unit(name: name, path: path, state: "missing")
            case .ours(let contents):
                Report.Unit(
                    name: name, path: path, state: "installed",
                    detail: ServiceUnits.value(of: "ExecStart", in: contents).map { "ExecStart=\($0)" }
                        ?? ServiceUnits.value(of: "ListenStream", in: contents).map { "ListenStream=\($0)" })
            case .foreign(let why):
                Report.Unit(name: name, path: path, state: "foreign", detail: why)
            }
        }
        let systemctlState: String
        if let systemctl = options.systemctl {
            // One line per unit on stdout (exit 3 when not all are active); nothing there when the
            // user's systemd cannot be reached, and the reason on stderr.
            let result = systemctl.run(["is-active"] + units.map(\.name))
            let lines = result.stdout.split(separator: "\n").map(String.init)
            if lines.count == units.count {
                for index in units.indices { units[index].active = lines[index] }
                systemctlState = "ran"
            } else {
                let reason = result.stderr.split(separator: "\n").first.map(String.init) ?? "exit \(result.status)"
                systemctlState = "failed: \(reason)"
            }
        } else {
            systemctlState = options.noSystemctl ? "skipped" : "not found"
        }
        let report = Report(unitDirectory: options.directory, units: units, systemctl: systemctlState)
        if json {
            print(jsonLine(report))
            return
        }
        var table = TextTable(["", ""])
        table.rows.append(["unit directory", report.unitDirectory])
        for unit in units {
            var cell = unit.state + (unit.detail.map { ": \($0)" } ?? "")
            if let active = unit.active { cell += " (\(active))" }
            table.rows.append([unit.name, cell])
        }
        table.rows.append(["systemctl", systemctlState == "ran" ? "is-active shown in parentheses" : systemctlState])
        print(table.render(header: false))
    }
}

/// Throws a usage error when `value` is an empty path or holds a newline (no unit file can say it).
func checkPath(_ value: String?, flag: String) throws {
    if let value, value.isEmpty || value.contains("\n") {
        throw ValidationError("\(flag) must be a non-empty path without newlines")
    }
}

/// `path` made absolute against the current directory, `.` and `..` resolved.
func absolutePath(_ path: String) -> String {
    let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    return (absolute as NSString).standardizingPath
}
