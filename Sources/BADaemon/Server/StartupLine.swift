import BADownloadEngine
import BASettings

/// basd's one line at start: what it is and where everything it uses is, so that a log shows
/// which basd served and from what without reading its unit file or environment.
///
/// ```
/// basd 0.1.0 started: state /home/me/.local/share/background-assets, socket
/// /run/user/1000/background-assets/basd.sock (socket-activated), settings
/// /home/me/.config/background-assets/config.json (absent: defaults), trust the system's CAs
/// (libcurl's /etc/ssl/certs/ca-certificates.crt, /etc/ssl/certs)
/// ```
/// (one line in the log).
struct StartupLine: Equatable {
    var version: String
    var stateDirectory: String
    var socketPath: String
    var isSocketActivated: Bool
    var settingsPath: String
    var settingsExist: Bool
    /// ``DownloadRequest/Trust/source(system:)``.
    var trust: String

    var text: String {
        let socket = isSocketActivated ? "socket-activated" : "bound by basd"
        let settings = settingsExist ? "present" : "absent: defaults"
        return
            "basd \(version) started: state \(stateDirectory), socket \(socketPath) (\(socket)), settings "
            + "\(settingsPath) (\(settings)), trust \(trust)"
    }
}
