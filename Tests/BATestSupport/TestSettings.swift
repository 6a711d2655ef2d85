import Foundation

/// The settings every test basd starts with: its own settings folder, never the developer's
/// `~/.config/background-assets`, and `allowedHosts` set to loopback so that no test download can
/// reach (or even look up) a host beyond this machine.
package enum TestSettings {
    /// The hosts a test basd may download from.
    package static let loopbackHosts = ["127.0.0.1", "localhost", "::1"]

    /// Prepares the settings of a basd about to start with `--state-dir stateDirectory` and returns
    /// `environment` with `XDG_CONFIG_HOME` set (kept if the test set its own; else
    /// `STATE_DIR/../config`, inside the test's temporary folder) and `BA_CONFIG` empty unless the
    /// test set it (so a developer's `BA_CONFIG` is not read either).
    ///
    /// The file basd will read (the test's `BA_CONFIG`; else the old `STATE_DIR/config.json` when a
    /// test left one there; else `$XDG_CONFIG_HOME/background-assets/config.json`) gets
    /// ``loopbackHosts`` as its `allowedHosts` unless it has that key already; the test's other keys
    /// stay. A file that is not a JSON object (a test of a malformed file) is left as it is.
    /// `DBUS_SESSION_BUS_ADDRESS` and `DBUS_SYSTEM_BUS_ADDRESS` name sockets that do not exist
    /// unless the test gives its own buses (``TestBus``).
    @discardableResult
    package static func prepare(stateDirectory: String, environment: [String: String] = [:]) throws -> [String: String]
    {
        var environment = environment
        let configHome =
            environment["XDG_CONFIG_HOME"]
            ?? ((stateDirectory as NSString).deletingLastPathComponent as NSString).appendingPathComponent("config")
        environment["XDG_CONFIG_HOME"] = configHome
        // The apps registered in this machine's drop-in folders are not this basd's to install.
        let parent = (stateDirectory as NSString).deletingLastPathComponent
        environment["XDG_DATA_HOME"] = environment["XDG_DATA_HOME"] ?? parent + "/data-home"
        environment["XDG_DATA_DIRS"] = environment["XDG_DATA_DIRS"] ?? parent + "/data-dirs"
        // The machine's D-Bus buses are not this basd's: a metered network or a power-saver
        // profile of the host would change what a test sees. A test gives its own (``TestBus``).
        environment["DBUS_SESSION_BUS_ADDRESS"] =
            environment["DBUS_SESSION_BUS_ADDRESS"] ?? "unix:path=\(parent)/no-session-bus"
        environment["DBUS_SYSTEM_BUS_ADDRESS"] =
            environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=\(parent)/no-system-bus"
        let old = (stateDirectory as NSString).appendingPathComponent("config.json")
        let path: String
        if let chosen = environment["BA_CONFIG"], !chosen.isEmpty {
            path = chosen
        } else {
            environment["BA_CONFIG"] = ""  // basd reads an empty one as unset
            path =
                FileManager.default.fileExists(atPath: old)
                ? old : (configHome as NSString).appendingPathComponent("background-assets/config.json")
        }
        try addLoopbackHosts(to: path)
        return environment
    }

    /// Adds `"allowedHosts": loopbackHosts` to the settings file at `path` (made if missing) unless it
    /// has the key or is not a JSON object.
    package static func addLoopbackHosts(to path: String) throws {
        let entry = #""allowedHosts": ["# + loopbackHosts.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
        guard let data = FileManager.default.contents(atPath: path) else {
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data("{ \(entry) }\n".utf8).write(to: URL(fileURLWithPath: path))
            return
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            object["allowedHosts"] == nil, let brace = data.firstIndex(of: UInt8(ascii: "{"))
        else { return }
        // The key goes in as text after the opening brace: the test's own keys keep their exact
        // spelling (a round trip through JSONSerialization may write a boolean as 1).
        let insertion = object.isEmpty ? " \(entry) " : " \(entry),"
        var merged = data
        merged.insert(contentsOf: Data(insertion.utf8), at: brace + 1)
        try merged.write(to: URL(fileURLWithPath: path))
    }
}
