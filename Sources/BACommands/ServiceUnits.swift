import BADaemonProtocol
import Foundation

/// The systemd user units `ba service install` writes: `basd.socket` (systemd owns the socket and
/// starts basd on the first connection), `basd.service` (basd itself, also started at login, and
/// exiting when idle) and `basd.timer` (starts basd again for what is due while it is not running).
/// Why each directive is there: docs/operations.md.
struct ServiceUnits {
    /// The unit files' names, service first.
    static let serviceName = "basd.service"
    static let socketName = "basd.socket"
    static let timerName = "basd.timer"
    static let names = [serviceName, socketName, timerName]
    /// What `enable --now` and `disable --now` name, and the target whose `.wants` links each.
    static let enabled = [
        (socketName, "sockets.target"), (timerName, "timers.target"), (serviceName, "default.target"),
    ]

    /// The line that marks a file as written by `ba service install`: `uninstall` deletes only
    /// files that carry it, and `install` overwrites only those.
    static let marker =
        "# Written by `ba service install` (swift-background-assets); `ba service uninstall` removes it."

    /// The socket, under the user's runtime directory (`%t` = `$XDG_RUNTIME_DIR` for a user unit):
    /// the path `ba` and apps connect to by default.
    static let listenStream = "%t/background-assets/basd.sock"

    /// The absolute path of the basd to run.
    var basdPath: String
    /// basd's `--state-dir`, or nil for basd's default.
    var stateDirectory: String?

    /// The contents of the unit file `name` (one of ``names``).
    func contents(of name: String) -> String {
        switch name {
        case Self.serviceName: service
        case Self.socketName: socket
        default: timer
        }
    }

    /// `ExecStart=`'s value: basd exits after ``DaemonProtocol/idleExitSeconds`` with nothing to do.
    var execStart: String {
        ([basdPath] + (stateDirectory.map { ["--state-dir", $0] } ?? []) + [
            "--exit-when-idle", String(DaemonProtocol.idleExitSeconds),
        ]).map(Self.quoted).joined(separator: " ")
    }

    /// `basd.service`.
    var service: String {
        """
        \(Self.marker)
        # It is rewritten by the next `ba service install`. See docs/operations.md.
        [Unit]
        Description=Background Assets daemon (basd)
        # Always with its socket: basd serves on the socket systemd passes (fd 3) and never binds its own.
        Requires=basd.socket
        After=basd.socket

        [Service]
        # --exit-when-idle: with no client, no download and nothing due before basd.timer's next start,
        # basd exits (0) after that many seconds; basd.socket starts it for the next client.
        ExecStart=\(execStart)
        # basd exits 0 after SIGTERM and when idle; a failure to start (a bad config.json, a busy state directory) or
        # a crash is retried, within systemd's start limit.
        Restart=on-failure
        RestartSec=2s
        # SIGTERM goes to basd alone, which stops its transfers and closes its state; extension runners
        # still running after basd exited are then SIGKILLed, not signalled mid-call beforehand.
        KillMode=mixed
        # Neither basd nor the extension runners it spawns ever gain privileges (no setuid, no file
        # capabilities), set set-user-ID bits, change the execution domain or ask for realtime scheduling.
        NoNewPrivileges=yes
        RestrictSUIDSGID=yes
        LockPersonality=yes
        RestrictRealtime=yes
        # Not PrivateTmp= and not MemoryDenyWriteExecute=: app folders and extensions may live under
        # /tmp, and an extension library (libffi closures, JITs) may need writable executable memory.

        [Install]
        WantedBy=default.target
        Also=basd.socket

        """
    }

    /// `basd.socket`.
    var socket: String {
        """
        \(Self.marker)
        # It is rewritten by the next `ba service install`. See docs/operations.md.
        [Unit]
        Description=Background Assets daemon socket (basd)

        [Socket]
        ListenStream=\(Self.listenStream)
        # Only you may connect (basd also checks each peer's uid); its folder is private too.
        SocketMode=0600
        DirectoryMode=0700
        RemoveOnStop=yes

        [Install]
        WantedBy=sockets.target

        """
    }

    /// `basd.timer`.
    var timer: String {
        """
        \(Self.marker)
        # It is rewritten by the next `ba service install`. See docs/operations.md.
        [Unit]
        Description=Starts basd for what is due while it is not running (basd)

        [Timer]
        # basd exits when idle (--exit-when-idle in basd.service); this starts it again for periodic
        # extension runs, asset-pack manifest checks and new app registrations. basd stays running
        # for anything due sooner than this, and a running basd is left as it is.
        OnActiveSec=\(DaemonProtocol.wakeTimerSeconds)s
        OnUnitInactiveSec=\(DaemonProtocol.wakeTimerSeconds)s
        AccuracySec=1min

        [Install]
        WantedBy=timers.target

        """
    }

    /// Whether `contents` is a unit file this command wrote (it has ``marker`` as a line).
    static func isOurs(_ contents: String) -> Bool {
        contents.split(separator: "\n", omittingEmptySubsequences: false).contains { $0 == marker }
    }

    /// The value of the first `KEY=` line of `contents`, or nil.
    static func value(of key: String, in contents: String) -> String? {
        contents.split(separator: "\n").first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    /// `argument` as one word of a systemd command line (`systemd.service(5)`, "Command lines"):
    /// `%` and `$` doubled (specifiers and variables are expanded even inside quotes), and double
    /// quotes with C escapes around anything but plain path characters.
    static func quoted(_ argument: String) -> String {
        let plain = argument.unicodeScalars.allSatisfy {
            $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "/._+:@,=-".unicodeScalars.contains($0))
        }
        if plain && !argument.isEmpty { return argument }
        var word = "\""
        for character in argument {
            switch character {
            case "\\": word += "\\\\"
            case "\"": word += "\\\""
            case "%": word += "%%"
            case "$": word += "$$"
            default: word.append(character)
            }
        }
        return word + "\""
    }
}
