import Foundation

/// Whether the machine is in Low Power Mode, read from the platform's power profile: Apple runs
/// no extension in Low Power Mode, and basd follows (`docs/lifecycle.md`).
///
/// The sources, in order (the first that can be read decides):
/// 1. `$BASD_POWER_PROFILE_FILE`: a file holding a profile name (`power-saver`, `low-power`,
///    `balanced`, …); for tests and for systems that keep the profile elsewhere.
/// 2. power-profiles-daemon's state, `/var/lib/power-profiles-daemon/state.ini`
///    (`Profile=power-saver`).
/// 3. The kernel's ACPI platform profile, `/sys/firmware/acpi/platform_profile` (`low-power`).
///
/// No readable source: not in Low Power Mode.
struct LowPowerMode: Sendable {
    /// Where the profile is read, in order.
    var sources: [String]

    static let powerProfilesDaemonState = "/var/lib/power-profiles-daemon/state.ini"
    static let platformProfile = "/sys/firmware/acpi/platform_profile"

    /// The sources for this process: `$BASD_POWER_PROFILE_FILE` alone when set, else the system's.
    static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> LowPowerMode {
        if let file = environment["BASD_POWER_PROFILE_FILE"], !file.isEmpty { return LowPowerMode(sources: [file]) }
        return LowPowerMode(sources: [powerProfilesDaemonState, platformProfile])
    }

    /// The profile in force and where it was read, or nil when no source can be read.
    func profile() -> (name: String, source: String)? {
        for source in sources {
            guard let text = Self.contents(of: source) else { continue }
            if let name = Self.profileName(in: text) { return (name, source) }
        }
        return nil
    }

    /// Why basd is in Low Power Mode ("power profile power-saver (…/state.ini)"), or nil.
    func reason() -> String? {
        guard let (name, source) = profile(), Self.isLowPower(name) else { return nil }
        return "power profile \(name) (\(source))"
    }

    /// Whether a profile name means Low Power Mode: power-profiles-daemon's `power-saver`, ACPI's
    /// `low-power` (and its `quiet`, which firmware uses for the same).
    static func isLowPower(_ name: String) -> Bool {
        ["power-saver", "low-power", "quiet"].contains(name.lowercased())
    }

    /// The profile named by a source's text: a bare name (`low-power\n`), or an ini file's
    /// `Profile=` line (power-profiles-daemon's `[State]` section).
    static func profileName(in text: String) -> String? {
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        for line in lines where line.lowercased().hasPrefix("profile=") {
            let value = line.dropFirst("profile=".count).trimmingCharacters(in: .whitespaces)
            return value.isEmpty ? nil : value
        }
        guard lines.count == 1, let only = lines.first, !only.isEmpty, !only.contains("=") else { return nil }
        return only
    }

    /// A small file's text (at most 64 KiB, regular files and sysfs attributes only), or nil.
    private static func contents(of path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        var bytes = [UInt8](repeating: 0, count: 64 << 10)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: bytes[..<count], as: UTF8.self)
    }
}
