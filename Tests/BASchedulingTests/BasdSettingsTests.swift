import BAScheduling
import Foundation
import Testing

@testable import BASettings

@Suite struct BasdSettingsTests {
    /// Loads `text` as a settings file and returns the error it throws, if any.
    func error(loading text: String) throws -> SettingsError? {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try directory.write(text, to: "config.json")
        do {
            _ = try BasdSettings.load(path: path)
            return nil
        } catch {
            #expect(error.path == path)
            #expect(error.description.hasPrefix(path + ": "))
            return error
        }
    }

    @Test func aMissingFileGivesTheDefaults() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let settings = try BasdSettings.load(path: directory.file("config.json"))
        #expect(settings == BasdSettings())
        #expect(settings.backgroundActivity)
        #expect(settings.inAppContent)
        #expect(settings.dailyRuntimeAllowanceSeconds == 300)
        #expect(settings.periodicBaseIntervalSeconds == 21_600)
        #expect(settings.periodicMinimumIntervalSeconds == 3_600)
        #expect(settings.periodicMaximumIntervalSeconds == 604_800)
        #expect(settings.quarantineThreshold == 3)
        #expect(settings.extensionCallTimeoutSeconds == 30)
        #expect(settings.purgeFreeSpaceThresholdBytes == 1_073_741_824)
        #expect(settings.automaticPurge)
        #expect(settings.backgroundDownloadConcurrency == 4)
        #expect(settings.periodicPolicy == PeriodicPolicy())
        #expect(settings.runtimeAllowancePolicy == RuntimeAllowancePolicy())
        // So does a missing directory on the way.
        #expect(try BasdSettings.load(path: directory.file("no/such/config.json")) == BasdSettings())
    }

    @Test func everyKeyIsRead() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try directory.write(
            """
            {
              "backgroundActivity": false, "inAppContent": false,
              "dailyRuntimeAllowanceSeconds": 0, "periodicBaseIntervalSeconds": 7200.5,
              "periodicMinimumIntervalSeconds": 600, "periodicMaximumIntervalSeconds": 86400,
              "quarantineThreshold": 5, "extensionCallTimeoutSeconds": 12.5,
              "purgeFreeSpaceThresholdBytes": 5000000000, "automaticPurge": false,
              "backgroundDownloadConcurrency": 1
            }
            """, to: "config.json")
        let settings = try BasdSettings.load(path: path)
        #expect(
            settings
                == BasdSettings(
                    backgroundActivity: false, inAppContent: false, dailyRuntimeAllowanceSeconds: 0,
                    periodicBaseIntervalSeconds: 7_200.5, periodicMinimumIntervalSeconds: 600,
                    periodicMaximumIntervalSeconds: 86_400, quarantineThreshold: 5, extensionCallTimeoutSeconds: 12.5,
                    purgeFreeSpaceThresholdBytes: 5_000_000_000, automaticPurge: false,
                    backgroundDownloadConcurrency: 1))
        #expect(
            settings.periodicPolicy
                == PeriodicPolicy(
                    baseInterval: 7_200.5, minimumInterval: 600,
                    maximumInterval: 86_400))
        #expect(settings.runtimeAllowancePolicy.baseAllowance == 0)
        #expect(try BasdSettings.load(path: directory.write("{}", to: "empty-object.json")) == BasdSettings())
    }

    @Test func malformedJSON() throws {
        let error = try #require(try error(loading: #"{ "backgroundActivity": tru }"#))
        #expect(error.code == .malformedJSON)
        #expect(error.message == "is not valid JSON: Invalid value around character 27 (line 1, column 28)")

        let lines = try #require(
            try self.error(loading: "{\n  \"quarantineThreshold\": 3\n  \"inAppContent\": true\n}"))
        #expect(lines.code == .malformedJSON)
        #expect(lines.message.contains("(line 3, column"))

        let empty = try #require(try self.error(loading: "\n"))
        #expect(empty.code == .malformedJSON)
        #expect(empty.message == "is empty; write {} for all defaults")

        let array = try #require(try self.error(loading: "[1, 2]"))
        #expect(array.code == .malformedJSON)
        #expect(array.message == "must be a JSON object ({…}), found an array")
    }

    @Test func unknownKey() throws {
        let error = try #require(try error(loading: #"{ "backgroundActivty": false }"#))
        #expect(error.code == .unknownKey)
        #expect(error.key == "backgroundActivty")
        #expect(error.message.hasPrefix(#"unknown key "backgroundActivty"; did you mean "backgroundActivity"?"#))

        let far = try #require(try self.error(loading: #"{ "colour": "blue" }"#))
        #expect(far.key == "colour")
        #expect(far.message.hasPrefix(#"unknown key "colour". The keys are: backgroundActivity, "#))
        #expect(far.message.contains("quarantineThreshold"))
    }

    @Test(arguments: [
        (
            #"{ "quarantineThreshold": "3" }"#, "quarantineThreshold",
            "quarantineThreshold must be an integer, found a string"
        ),
        (
            #"{ "quarantineThreshold": 2.5 }"#, "quarantineThreshold",
            "quarantineThreshold must be an integer, found a number with a fraction"
        ),
        (
            #"{ "backgroundActivity": 1 }"#, "backgroundActivity",
            "backgroundActivity must be true or false, found an integer"
        ),
        (#"{ "inAppContent": "yes" }"#, "inAppContent", "inAppContent must be true or false, found a string"),
        (
            #"{ "extensionCallTimeoutSeconds": true }"#, "extensionCallTimeoutSeconds",
            "extensionCallTimeoutSeconds must be a number of seconds, found a boolean"
        ),
        (
            #"{ "dailyRuntimeAllowanceSeconds": null }"#, "dailyRuntimeAllowanceSeconds",
            "dailyRuntimeAllowanceSeconds must be a number of seconds, found null (leave the key out for its default)"
        ),
        (
            #"{ "purgeFreeSpaceThresholdBytes": [1] }"#, "purgeFreeSpaceThresholdBytes",
            "purgeFreeSpaceThresholdBytes must be an integer, found an array"
        ),
    ])
    func wrongType(text: String, key: String, message: String) throws {
        let error = try #require(try error(loading: text))
        #expect(error.code == .wrongType)
        #expect(error.key == key)
        #expect(error.message == message)
    }

    @Test(arguments: [
        (
            #"{ "dailyRuntimeAllowanceSeconds": -1 }"#, "dailyRuntimeAllowanceSeconds",
            "dailyRuntimeAllowanceSeconds must not be negative, found -1.0"
        ),
        (
            #"{ "periodicBaseIntervalSeconds": -0.5 }"#, "periodicBaseIntervalSeconds",
            "periodicBaseIntervalSeconds must not be negative, found -0.5"
        ),
        (
            #"{ "extensionCallTimeoutSeconds": 0 }"#, "extensionCallTimeoutSeconds",
            "extensionCallTimeoutSeconds must be more than 0"
        ),
        (#"{ "quarantineThreshold": 0 }"#, "quarantineThreshold", "quarantineThreshold must be at least 1, found 0"),
        (
            #"{ "backgroundDownloadConcurrency": 0 }"#, "backgroundDownloadConcurrency",
            "backgroundDownloadConcurrency must be at least 1, found 0"
        ),
        (
            #"{ "purgeFreeSpaceThresholdBytes": -1 }"#, "purgeFreeSpaceThresholdBytes",
            "purgeFreeSpaceThresholdBytes must not be negative, found -1"
        ),
        (
            #"{ "periodicMinimumIntervalSeconds": 7200, "periodicMaximumIntervalSeconds": 3600 }"#,
            "periodicMinimumIntervalSeconds",
            "periodicMinimumIntervalSeconds (7200.0) is more than periodicMaximumIntervalSeconds (3600.0)"
        ),
    ])
    func invalidValue(text: String, key: String, message: String) throws {
        let error = try #require(try error(loading: text))
        #expect(error.code == .invalidValue)
        #expect(error.key == key)
        #expect(error.message == message)
    }

    @Test func allowedHostsAreReadLowercased() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try directory.write(
            #"{ "allowedHosts": ["CDN.example.com", "*.assets.example.com", "127.0.0.1", "::1", "localhost"] }"#,
            to: "config.json")
        #expect(
            try BasdSettings.load(path: path).allowedHosts
                == ["cdn.example.com", "*.assets.example.com", "127.0.0.1", "::1", "localhost"])
        #expect(BasdSettings().allowedHosts == nil, "default: every host")
    }

    /// Each bad `allowedHosts` value, and the error that says how to write it.
    @Test(arguments: [
        (#"{ "allowedHosts": "cdn.example.com" }"#, SettingsError.Code.wrongType, "must be an array of host names"),
        (#"{ "allowedHosts": [1] }"#, .wrongType, "allowedHosts[0] must be a host name (a string), found an integer"),
        (#"{ "allowedHosts": [] }"#, .invalidValue, "leave the key out to allow every host"),
        (#"{ "allowedHosts": ["https://cdn.example.com"] }"#, .invalidValue, "without scheme or path"),
        (#"{ "allowedHosts": ["cdn.example.com/assets"] }"#, .invalidValue, "without scheme or path"),
        (#"{ "allowedHosts": ["a.example", "cdn.example.com:0"] }"#, .invalidValue, "allowedHosts[1] "),
        (#"{ "allowedHosts": ["cdn.example.com:65536"] }"#, .invalidValue, "a port from 1 to 65535"),
        (#"{ "allowedHosts": ["cdn.example.com:https"] }"#, .invalidValue, "a port from 1 to 65535"),
        (#"{ "allowedHosts": ["[cdn.example.com]:80"] }"#, .invalidValue, "no IPv6 address in them"),
        (#"{ "allowedHosts": ["::1]"] }"#, .invalidValue, "] without ["),
        (#"{ "allowedHosts": ["*"] }"#, .invalidValue, "*. before one"),
        (#"{ "allowedHosts": ["*example.com"] }"#, .invalidValue, "is not a host name"),
        (#"{ "allowedHosts": ["cdn..example.com"] }"#, .invalidValue, "is not a host name"),
        (#"{ "allowedHosts": [""] }"#, .invalidValue, "is not a host name"),
    ])
    func badAllowedHosts(text: String, code: SettingsError.Code, fragment: String) throws {
        let error = try #require(try error(loading: text))
        #expect(error.code == code)
        #expect(error.key == "allowedHosts")
        #expect(error.message.contains(fragment), "\(error.message)")
    }

    @Test(arguments: [
        ("cdn.example.com", true), ("*.example.com", true), ("127.0.0.1", true), ("::1", true),
        ("fe80::1", true), ("localhost", true), ("under_score.example", false), ("*.*.example.com", false),
        ("-a.example", false), ("a b.example", false), ("*.", false),
        // A port: with a host, an address or a wildcard; an IPv6 address with one in brackets.
        ("host:80", true), ("127.0.0.1:8080", true), ("*.example.com:443", true), ("[::1]:8080", true),
        ("[::1]", true), ("host:", false), ("host:0", false), ("host:123456", false), ("a:b:c.example", false),
        ("[::1]:", false), ("[::1]x", false), ("under_score:80", false),
    ])
    func hostEntries(entry: String, valid: Bool) {
        #expect((BasdSettings.hostProblem(entry) == nil) == valid, "\(entry)")
    }

    @Test func aDirectoryIsUnreadable() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        #expect(throws: SettingsError(.unreadable, path: directory.path, message: "is not a regular file")) {
            try BasdSettings.load(path: directory.path)
        }
    }
}

@Suite struct SettingsFileTests {
    @Test func reloadPicksUpEditsAndKeepsTheLastGoodOnABadOne() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("config.json")
        var file = SettingsFile(path: path)

        // No file: the defaults, once.
        #expect(file.check() == .loaded(BasdSettings()))
        #expect(file.check() == .unchanged)

        try directory.write(#"{ "quarantineThreshold": 5 }"#, to: "config.json")
        #expect(file.check() == .loaded(BasdSettings(quarantineThreshold: 5)))
        #expect(file.check() == .unchanged)

        try directory.write(#"{ "quarantineThreshold": 5, "backgroundActivity": false }"#, to: "config.json")
        let edited = BasdSettings(backgroundActivity: false, quarantineThreshold: 5)
        #expect(file.check() == .loaded(edited))
        #expect(file.settings == edited)

        // A bad edit is reported once; the last good settings stay.
        try directory.write(#"{ "quarantineThreshold": "five" }"#, to: "config.json")
        guard case .rejected(let error) = file.check() else {
            Issue.record("expected the bad edit to be rejected")
            return
        }
        #expect(error.code == .wrongType)
        #expect(error.key == "quarantineThreshold")
        #expect(file.settings == edited)
        #expect(file.lastError == error)
        #expect(file.check() == .unchanged)
        #expect(file.settings == edited)

        // Fixed, in place (same inode, different size).
        try directory.write(#"{ "quarantineThreshold": 7 }"#, to: "config.json", atomically: false)
        #expect(file.check() == .loaded(BasdSettings(quarantineThreshold: 7)))
        #expect(file.lastError == nil)

        // Removed: back to the defaults.
        try FileManager.default.removeItem(atPath: path)
        #expect(file.check() == .loaded(BasdSettings()))
        #expect(file.check() == .unchanged)
    }

    @Test func aBadFileAtStartKeepsTheDefaults() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try directory.write("{", to: "config.json")
        var file = SettingsFile(path: path)
        guard case .rejected(let error) = file.check() else {
            Issue.record("expected a rejection")
            return
        }
        #expect(error.code == .malformedJSON)
        #expect(file.settings == BasdSettings())
    }
}

/// `meteredPackConsentBytes`: Google Play's 200 MB by default; 0 and Int64.max are the ends; a
/// negative, fractional, too large or non-number value is refused with the key named.
@Suite struct MeteredPackConsentSettingTests {
    func load(_ text: String) throws -> Result<BasdSettings, SettingsError> {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try directory.write(text, to: "config.json")
        do { return .success(try BasdSettings.load(path: path)) } catch { return .failure(error) }
    }

    @Test func theDefaultIsPlays200MB() throws {
        #expect(BasdSettings().meteredPackConsentBytes == 200_000_000)
        #expect(try load("{}").get().meteredPackConsentBytes == 200_000_000)
    }

    @Test(arguments: [("0", Int64(0)), ("1048576", 1 << 20), ("9223372036854775807", Int64.max)])
    func accepted(value: String, expected: Int64) throws {
        #expect(try load(#"{"meteredPackConsentBytes": \#(value)}"#).get().meteredPackConsentBytes == expected)
    }

    @Test(arguments: [
        ("-1", SettingsError.Code.invalidValue), ("-9223372036854775808", .invalidValue), ("1.5", .wrongType),
        ("1e30", .wrongType), ("99999999999999999999999", .wrongType), ("\"200MB\"", .wrongType), ("null", .wrongType),
    ])
    func refused(value: String, code: SettingsError.Code) throws {
        guard case .failure(let error) = try load(#"{"meteredPackConsentBytes": \#(value)}"#) else {
            Issue.record("\(value) was accepted")
            return
        }
        #expect(error.code == code, "\(error)")
        #expect(error.key == "meteredPackConsentBytes", "\(error)")
    }
}
