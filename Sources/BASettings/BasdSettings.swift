import BACore
import BAScheduling
import Foundation

/// basd's settings: the user's switches and the scheduling budgets, read from a JSON file
/// (`config.json` in basd's state directory).
///
/// Every key is optional; a missing file means all defaults. The keys, their types and defaults:
///
/// | key | type | default |
/// |---|---|---|
/// | `backgroundActivity` | boolean | `true` |
/// | `inAppContent` | boolean | `true` |
/// | `dailyRuntimeAllowanceSeconds` | number ≥ 0 | 300 |
/// | `periodicBaseIntervalSeconds` | number > 0 | 21 600 (6 h) |
/// | `periodicMinimumIntervalSeconds` | number > 0 | 3 600 (1 h) |
/// | `periodicMaximumIntervalSeconds` | number > 0 | 604 800 (7 days) |
/// | `quarantineThreshold` | integer ≥ 1 | 3 |
/// | `extensionCallTimeoutSeconds` | number > 0 | 30 |
/// | `purgeFreeSpaceThresholdBytes` | integer ≥ 0 | 1 073 741 824 (1 GiB) |
/// | `automaticPurge` | boolean | `true` |
/// | `backgroundDownloadConcurrency` | integer ≥ 1 | 4 |
/// | `extensionSandbox` | boolean | `true` |
/// | `caFile` | absolute path of a PEM file | none (the system's CAs) |
/// | `caDirectory` | absolute path of a folder of hashed CA certificates | none (the system's CAs) |
/// | `pinnedPublicKey` | `sha256//BASE64[;sha256//…]` or a key file's absolute path | none |
/// | `allowedHosts` | non-empty array of host names, IP addresses or `*.` wildcards, each optionally with `:PORT` | none (every host) |
/// | `waitOnMeteredNetwork` | boolean | `true` |
/// | `lowPowerModeOnBattery` | boolean | `false` |
/// | `meteredPackConsentBytes` | integer ≥ 0 | 200 000 000 (200 MB, Google Play's) |
///
/// ```json
/// { "backgroundActivity": false, "dailyRuntimeAllowanceSeconds": 600 }
/// ```
///
/// ```swift
/// let settings = try BasdSettings.load(path: stateDirectory + "/config.json")
/// let policy = settings.periodicPolicy
/// ```
package struct BasdSettings: Sendable, Equatable {
    /// Whether apps may do background work at all. Off: basd refuses to schedule background
    /// downloads (Apple's error 111, `downloadBackgroundActivityProhibited`) and runs no periodic
    /// checks. Default true.
    package var backgroundActivity: Bool
    /// Whether content may be fetched before an app's first launch. Off: no extension runs before
    /// launch (`.install`, `.update`) and no essential downloads. Default true.
    package var inAppContent: Bool
    /// The base daily runtime allowance per app, in seconds, before the bonus for launches.
    /// Default 300.
    package var dailyRuntimeAllowanceSeconds: TimeInterval
    /// The periodic-check interval of an app in ordinary use, in seconds. Default 21 600 (6 h).
    package var periodicBaseIntervalSeconds: TimeInterval
    /// The shortest periodic-check interval, in seconds. Default 3 600 (1 h).
    package var periodicMinimumIntervalSeconds: TimeInterval
    /// The longest periodic-check interval, in seconds. Default 604 800 (7 days).
    package var periodicMaximumIntervalSeconds: TimeInterval
    /// Consecutive crashes or timeouts that quarantine an extension. Default 3.
    package var quarantineThreshold: Int
    /// The wall-clock deadline of one extension call, in seconds; the runner is killed after it.
    /// Default 30.
    package var extensionCallTimeoutSeconds: TimeInterval
    /// Below this much free space on the state directory's file system, basd purges finished,
    /// unmodified assets. Default 1 GiB.
    package var purgeFreeSpaceThresholdBytes: Int64
    /// Whether basd purges on its own when free space is under the threshold (checked at most once
    /// a minute). Off, only `ba purge` purges. Default on.
    package var automaticPurge: Bool
    /// How many background-priority transfers run at once; more wait in the queue (priority, then
    /// arrival). Essential and foreground transfers start at once and are not counted. Default 4.
    package var backgroundDownloadConcurrency: Int
    /// Whether extension calls run in the sandbox (no network, Landlock, seccomp; docs/threat-model.md).
    /// Off is for debugging an extension only, and basd logs a warning at every call. Default on.
    package var extensionSandbox: Bool
    /// A PEM file of CA certificates that manifests and downloads trust instead of the system's
    /// (a private CA). Default none.
    package var caFile: String?
    /// A folder of CA certificates (named by hash, as `openssl rehash` makes them) that manifests
    /// and downloads trust instead of the system's. Default none.
    package var caDirectory: String?
    /// The public key every server must present, as libcurl's `CURLOPT_PINNEDPUBLICKEY` takes it:
    /// `sha256//BASE64` hashes (`;`-separated) or a PEM/DER key file. Default none.
    package var pinnedPublicKey: String?
    /// The only hosts basd may download from, if set: every download, manifest fetch and redirect hop
    /// must go to one of them (and also satisfy an app's own pre-launch `BADownloadDomainAllowList`).
    /// An entry is a host name (`cdn.example.com`, case-insensitive), an IP address (`127.0.0.1`,
    /// `::1`) or a wildcard (`*.example.com`: any subdomain, not `example.com` itself). A refused
    /// host fails at once, before any name lookup. For a kiosk or a company network that may only
    /// reach its own servers. Default none: every host.
    package var allowedHosts: [String]?
    /// Whether background downloads and non-essential asset packs wait while NetworkManager says
    /// the network is metered (yes, or guessed yes). Essential and foreground ones go on; a
    /// download whose request disallows expensive networks waits whatever this says. Default true.
    package var waitOnMeteredNetwork = true
    /// Whether running on battery (UPower's `OnBattery` on the system bus) puts basd in Low Power
    /// Mode, as the power-saver profile does: no extension runs, background downloads and
    /// non-essential asset packs wait. Default false (power-profiles-daemon's profile decides).
    package var lowPowerModeOnBattery = false
    /// Above this many bytes to fetch, an asset pack that is neither essential nor asked for by
    /// its app (`ensureLocalAvailability`, `ba packs ensure`: asking is consent) waits while the
    /// network is metered, whatever ``waitOnMeteredNetwork`` says (``PackConsent``). 0: every
    /// such pack with anything to fetch waits. Default 200 000 000 (200 MB, Google Play's
    /// cellular-consent threshold).
    package var meteredPackConsentBytes: Int64 = 200_000_000

    /// The default settings, with any value overridden.
    package init(
        backgroundActivity: Bool = true,
        inAppContent: Bool = true,
        dailyRuntimeAllowanceSeconds: TimeInterval = 300,
        periodicBaseIntervalSeconds: TimeInterval = 6 * 3_600,
        periodicMinimumIntervalSeconds: TimeInterval = 3_600,
        periodicMaximumIntervalSeconds: TimeInterval = 7 * 86_400,
        quarantineThreshold: Int = QuarantineState.defaultThreshold,
        extensionCallTimeoutSeconds: TimeInterval = 30,
        purgeFreeSpaceThresholdBytes: Int64 = 1 << 30,
        automaticPurge: Bool = true,
        backgroundDownloadConcurrency: Int = 4,
        extensionSandbox: Bool = true
    ) {
        self.backgroundActivity = backgroundActivity
        self.inAppContent = inAppContent
        self.dailyRuntimeAllowanceSeconds = dailyRuntimeAllowanceSeconds
        self.periodicBaseIntervalSeconds = periodicBaseIntervalSeconds
        self.periodicMinimumIntervalSeconds = periodicMinimumIntervalSeconds
        self.periodicMaximumIntervalSeconds = periodicMaximumIntervalSeconds
        self.quarantineThreshold = quarantineThreshold
        self.extensionCallTimeoutSeconds = extensionCallTimeoutSeconds
        self.purgeFreeSpaceThresholdBytes = purgeFreeSpaceThresholdBytes
        self.automaticPurge = automaticPurge
        self.backgroundDownloadConcurrency = backgroundDownloadConcurrency
        self.extensionSandbox = extensionSandbox
    }

    /// The periodic-check policy these settings make: base, minimum and maximum from the settings,
    /// the default jitter (±10 %).
    package var periodicPolicy: PeriodicPolicy {
        PeriodicPolicy(
            baseInterval: periodicBaseIntervalSeconds,
            minimumInterval: periodicMinimumIntervalSeconds,
            maximumInterval: periodicMaximumIntervalSeconds)
    }

    /// The runtime allowance policy these settings make: the base from
    /// ``dailyRuntimeAllowanceSeconds``, the default bonus (30 s per launch in the last 7 days, at
    /// most 600 s) and 24-hour windows.
    package var runtimeAllowancePolicy: RuntimeAllowancePolicy {
        RuntimeAllowancePolicy(baseAllowance: dailyRuntimeAllowanceSeconds)
    }

    /// Every key the settings file may hold.
    package static let keys: [String] = [
        "backgroundActivity", "inAppContent", "dailyRuntimeAllowanceSeconds", "periodicBaseIntervalSeconds",
        "periodicMinimumIntervalSeconds", "periodicMaximumIntervalSeconds", "quarantineThreshold",
        "extensionCallTimeoutSeconds", "purgeFreeSpaceThresholdBytes", "automaticPurge",
        "backgroundDownloadConcurrency", "extensionSandbox", "caFile", "caDirectory", "pinnedPublicKey",
        "allowedHosts", "waitOnMeteredNetwork", "lowPowerModeOnBattery", "meteredPackConsentBytes",
    ]

    /// The largest settings file read (1 MiB); anything bigger is not a hand-written config.
    static let maximumFileSize = 1 << 20

    /// Reads a settings file.
    ///
    /// - Parameter path: The file, e.g. `STATE_DIR/config.json`.
    /// - Returns: The settings; all defaults if the file does not exist.
    /// - Throws: ``SettingsError`` naming the file (and the key, for a problem with one key) when the
    ///   file cannot be read, is empty or not a JSON object, holds an unknown key, a value of the
    ///   wrong type, or a value out of range (a negative number, a zero timeout, a minimum interval
    ///   above the maximum).
    package static func load(path: String) throws(SettingsError) -> BasdSettings {
        guard let data = try read(path: path) else { return BasdSettings() }
        return try parse(data, path: path)
    }

    /// The file's bytes, or nil if it does not exist.
    static func read(path: String) throws(SettingsError) -> Data? {
        let status: FileStatus
        switch FileStatus.of(path) {
        case .success(let found): status = found
        case .failure(let failure) where failure.isMissing: return nil
        case .failure(let failure):
            throw SettingsError(.unreadable, path: path, message: "cannot be read: \(failure.message)")
        }
        guard status.isRegularFile else {
            throw SettingsError(.unreadable, path: path, message: "is not a regular file")
        }
        guard status.size <= Int64(maximumFileSize) else {
            throw SettingsError(
                .unreadable, path: path,
                message: "is \(status.size) bytes, more than the \(maximumFileSize) a settings file may have")
        }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch CocoaError.fileReadNoSuchFile {
            return nil  // removed between the stat and the read
        } catch {
            throw SettingsError(.unreadable, path: path, message: "cannot be read: \(error.localizedDescription)")
        }
    }

    /// Parses and checks the file's contents.
    static func parse(_ data: Data, path: String) throws(SettingsError) -> BasdSettings {
        if data.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            // An empty file is more likely an editor mid-save than a wish for defaults.
            throw SettingsError(.malformedJSON, path: path, message: "is empty; write {} for all defaults")
        }
        let object: [String: JSONValue]
        do {
            let value = try JSONDecoder().decode(JSONValue.self, from: data)
            guard case .object(let dictionary) = value else {
                throw SettingsError(
                    .malformedJSON, path: path, message: "must be a JSON object ({…}), found \(value.kindDescription)")
            }
            object = dictionary
        } catch let error as SettingsError {
            throw error
        } catch {
            throw SettingsError(
                .malformedJSON, path: path, message: "is not valid JSON: \(Self.describe(error, in: data))")
        }

        for key in object.keys.sorted() where !keys.contains(key) {
            var message = "unknown key \"\(key)\""
            if let suggestion = closestKey(to: key) {
                message += "; did you mean \"\(suggestion)\"?"
            } else {
                message += "."
            }
            message += " The keys are: \(keys.joined(separator: ", "))."
            throw SettingsError(.unknownKey, path: path, key: key, message: message)
        }

        let reader = Reader(object: object, path: path)
        var settings = BasdSettings()
        settings.backgroundActivity = try reader.bool("backgroundActivity") ?? settings.backgroundActivity
        settings.inAppContent = try reader.bool("inAppContent") ?? settings.inAppContent
        settings.dailyRuntimeAllowanceSeconds =
            try reader.seconds("dailyRuntimeAllowanceSeconds", allowZero: true) ?? settings.dailyRuntimeAllowanceSeconds
        settings.periodicBaseIntervalSeconds =
            try reader.seconds("periodicBaseIntervalSeconds") ?? settings.periodicBaseIntervalSeconds
        settings.periodicMinimumIntervalSeconds =
            try reader.seconds("periodicMinimumIntervalSeconds") ?? settings.periodicMinimumIntervalSeconds
        settings.periodicMaximumIntervalSeconds =
            try reader.seconds("periodicMaximumIntervalSeconds") ?? settings.periodicMaximumIntervalSeconds
        settings.quarantineThreshold =
            try reader.integer("quarantineThreshold", minimum: 1).map { Int($0) }
            ?? settings.quarantineThreshold
        settings.extensionCallTimeoutSeconds =
            try reader.seconds("extensionCallTimeoutSeconds") ?? settings.extensionCallTimeoutSeconds
        settings.purgeFreeSpaceThresholdBytes =
            try reader.integer("purgeFreeSpaceThresholdBytes", minimum: 0) ?? settings.purgeFreeSpaceThresholdBytes
        settings.automaticPurge = try reader.bool("automaticPurge") ?? settings.automaticPurge
        settings.backgroundDownloadConcurrency =
            try reader.integer("backgroundDownloadConcurrency", minimum: 1).map { Int(clamping: $0) }
            ?? settings.backgroundDownloadConcurrency
        settings.extensionSandbox = try reader.bool("extensionSandbox") ?? settings.extensionSandbox
        settings.waitOnMeteredNetwork = try reader.bool("waitOnMeteredNetwork") ?? settings.waitOnMeteredNetwork
        settings.lowPowerModeOnBattery =
            try reader.bool("lowPowerModeOnBattery") ?? settings.lowPowerModeOnBattery
        settings.meteredPackConsentBytes =
            try reader.integer("meteredPackConsentBytes", minimum: 0) ?? settings.meteredPackConsentBytes
        settings.caFile = try reader.path("caFile", directory: false)
        settings.caDirectory = try reader.path("caDirectory", directory: true)
        if let pin = try reader.string("pinnedPublicKey") {
            guard pin.hasPrefix("sha256//") || pin.hasPrefix("/") else {
                throw SettingsError(
                    .invalidValue, path: path, key: "pinnedPublicKey",
                    message: "pinnedPublicKey must be sha256//BASE64 (one or more, ;-separated) or a key file's "
                        + "absolute path, found \"\(pin)\"")
            }
            settings.pinnedPublicKey = pin
        }
        settings.allowedHosts = try reader.hosts("allowedHosts")

        if settings.periodicMinimumIntervalSeconds > settings.periodicMaximumIntervalSeconds {
            throw SettingsError(
                .invalidValue, path: path, key: "periodicMinimumIntervalSeconds",
                message: "periodicMinimumIntervalSeconds (\(settings.periodicMinimumIntervalSeconds)) is more than "
                    + "periodicMaximumIntervalSeconds (\(settings.periodicMaximumIntervalSeconds))")
        }
        return settings
    }

    /// Typed access to the object's values, throwing errors that name the key.
    private struct Reader {
        let object: [String: JSONValue]
        let path: String

        func bool(_ key: String) throws(SettingsError) -> Bool? {
            guard let value = object[key] else { return nil }
            guard case .bool(let bool) = value else { throw wrongType(key, expected: "true or false", found: value) }
            return bool
        }

        /// A number of seconds: an integer or a fraction, more than 0 (or at least 0).
        func seconds(_ key: String, allowZero: Bool = false) throws(SettingsError) -> TimeInterval? {
            guard let value = object[key] else { return nil }
            let seconds: Double
            switch value {
            case .integer(let integer): seconds = Double(integer)
            case .number(let number): seconds = number
            default: throw wrongType(key, expected: "a number of seconds", found: value)
            }
            if seconds < 0 || !seconds.isFinite {
                throw SettingsError(
                    .invalidValue, path: path, key: key, message: "\(key) must not be negative, found \(seconds)")
            }
            if seconds == 0 && !allowZero {
                throw SettingsError(.invalidValue, path: path, key: key, message: "\(key) must be more than 0")
            }
            return seconds
        }

        func string(_ key: String) throws(SettingsError) -> String? {
            guard let value = object[key] else { return nil }
            guard case .string(let string) = value, !string.isEmpty else {
                throw wrongType(key, expected: "a non-empty string", found: value)
            }
            return string
        }

        /// An absolute path to an existing file (or folder).
        func path(_ key: String, directory: Bool) throws(SettingsError) -> String? {
            guard let path = try string(key) else { return nil }
            let what = directory ? "folder" : "file"
            guard path.hasPrefix("/") else {
                throw SettingsError(
                    .invalidValue, path: self.path, key: key,
                    message: "\(key) must be an absolute path, found \"\(path)\"")
            }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory),
                isDirectory.boolValue == directory
            else {
                throw SettingsError(
                    .invalidValue, path: self.path, key: key, message: "\(key): no \(what) at \(path)")
            }
            return path
        }

        /// A non-empty array of host names, IP addresses or `*.` wildcards, lowercased.
        func hosts(_ key: String) throws(SettingsError) -> [String]? {
            guard let value = object[key] else { return nil }
            guard case .array(let items) = value else {
                throw wrongType(key, expected: "an array of host names", found: value)
            }
            guard !items.isEmpty else {
                throw SettingsError(
                    .invalidValue, path: path, key: key,
                    message: "\(key) is empty, which would refuse every download; leave the key out to allow every host"
                )
            }
            var hosts: [String] = []
            for (index, item) in items.enumerated() {
                guard case .string(let host) = item else {
                    throw SettingsError(
                        .wrongType, path: path, key: key,
                        message: "\(key)[\(index)] must be a host name (a string), found \(item.kindDescription)")
                }
                if let problem = BasdSettings.hostProblem(host) {
                    throw SettingsError(
                        .invalidValue, path: path, key: key,
                        message: "\(key)[\(index)] \"\(host)\" \(problem)")
                }
                hosts.append(host.lowercased())
            }
            return hosts
        }

        func integer(_ key: String, minimum: Int64) throws(SettingsError) -> Int64? {
            guard let value = object[key] else { return nil }
            guard case .integer(let integer) = value else { throw wrongType(key, expected: "an integer", found: value) }
            if integer < minimum {
                let rule = minimum == 0 ? "must not be negative" : "must be at least \(minimum)"
                throw SettingsError(.invalidValue, path: path, key: key, message: "\(key) \(rule), found \(integer)")
            }
            return integer
        }

        private func wrongType(_ key: String, expected: String, found: JSONValue) -> SettingsError {
            var message = "\(key) must be \(expected), found \(found.kindDescription)"
            if found == .null { message += " (leave the key out for its default)" }
            return SettingsError(.wrongType, path: path, key: key, message: message)
        }
    }

    /// Why `entry` is not an `allowedHosts` entry (a host name, an IP address or `*.` and a host
    /// name, each optionally with `:PORT`; an IPv6 address with a port in brackets, `[::1]:8080`),
    /// or nil when it is one.
    static func hostProblem(_ entry: String) -> String? {
        if entry.contains("://") || entry.contains("/") {
            return "is not a host name: write the host alone (\"cdn.example.com\"), without scheme or path"
        }
        let isIPv6 = { (text: Substring) -> Bool in
            text.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." } && text.count >= 2
                && text.filter { $0 == ":" }.count >= 2
        }
        let portProblem =
            "has a port that is not one: write a port from 1 to 65535 after the host (\"cdn.example.com:8443\")"
        if entry.hasPrefix("[") {
            // `[IPv6]` or `[IPv6]:PORT`.
            guard let close = entry.firstIndex(of: "]"), isIPv6(entry[entry.index(after: entry.startIndex)..<close])
            else {
                return "has brackets but no IPv6 address in them: write \"[::1]:8080\", or \"::1\" for every port"
            }
            let rest = entry[entry.index(after: close)...]
            if rest.isEmpty { return nil }
            guard rest.hasPrefix(":"), Self.port(rest.dropFirst()) != nil else { return portProblem }
            return nil
        }
        if entry.hasSuffix("]") { return "has a ] without [: write an IPv6 address as \"::1\" or \"[::1]:8080\"" }
        var entry = Substring(entry)
        if entry.contains(":") {
            // An IPv6 address (every port), or a host with a port.
            if isIPv6(entry) { return nil }
            guard entry.filter({ $0 == ":" }).count == 1, let colon = entry.firstIndex(of: ":") else {
                return "is not a host name or IP address: write \"cdn.example.com\" or \"cdn.example.com:8443\""
            }
            guard Self.port(entry[entry.index(after: colon)...]) != nil else { return portProblem }
            entry = entry[..<colon]
        }
        let name = entry.hasPrefix("*.") ? entry.dropFirst(2) : entry
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        let validLabel = { (label: Substring) -> Bool in
            !label.isEmpty && label.count <= 63 && label.first != "-" && label.last != "-"
                && label.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" }
        }
        guard !name.isEmpty, name.count <= 253, labels.allSatisfy(validLabel) else {
            return "is not a host name: use letters, digits, - and dots (\"cdn.example.com\"), "
                + "or *. before one for its subdomains (\"*.example.com\")"
        }
        return nil
    }

    /// A port's digits (1–65535), or nil.
    static func port(_ text: Substring) -> Int? {
        guard (1...5).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(text),
            (1...65_535).contains(value)
        else { return nil }
        return value
    }

    /// The known key nearest to a misspelt one, if it is near enough to be a typo.
    static func closestKey(to key: String) -> String? {
        let lowered = key.lowercased()
        let scored = keys.map { ($0, editDistance(Array(lowered), Array($0.lowercased()))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(2, key.count / 4) else { return nil }
        return best.0
    }

    /// Levenshtein distance.
    private static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        var previous = Array(0...b.count)
        for (i, ca) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, cb) in b.enumerated() {
                current[j + 1] = Swift.min(previous[j + 1] + 1, current[j] + 1, previous[j] + (ca == cb ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// A JSON syntax error in a line, with where it is when the parser says.
    ///
    /// `JSONDecoder` only says "not valid JSON"; `JSONSerialization` names the byte offset
    /// ("Invalid value around character 10."), turned here into a line and column.
    private static func describe(_ error: any Error, in data: Data) -> String {
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            if let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String {
                let sentence = detail.hasSuffix(".") ? String(detail.dropLast()) : detail
                return sentence + location(in: data, describedBy: detail)
            }
        }
        guard case DecodingError.dataCorrupted(let context) = error else { return "\(error)" }
        return context.underlyingError.map { "\($0)" } ?? context.debugDescription
    }

    /// `" (line L, column C)"` for the first "character N" in `detail` (a 0-based byte offset).
    private static func location(in data: Data, describedBy detail: String) -> String {
        guard let range = detail.range(of: "character ") else { return "" }
        guard let offset = Int(detail[range.upperBound...].prefix(while: \.isNumber)), offset <= data.count else {
            return ""
        }
        let before = data.prefix(offset)
        let line = before.reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }
        let column = offset - (before.lastIndex(of: 0x0A).map { $0 - data.startIndex + 1 } ?? 0) + 1
        return " (line \(line), column \(column))"
    }
}
