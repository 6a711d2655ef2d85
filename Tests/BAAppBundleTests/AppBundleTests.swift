import BAAppBundle
import Foundation
import Testing

/// A temporary app directory, removed by `remove()`.
struct TempApp {
    let directory: String
    var plistPath: String { directory + "/Info.plist" }

    init() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("BAAppBundleTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        directory = url.standardizedFileURL.path
    }

    func write(_ data: Data) throws { try data.write(to: URL(fileURLWithPath: plistPath)) }
    func write(xml entries: [(key: String, value: String)]) throws { try write(Data(Plist.xml(entries).utf8)) }
    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// Info.plist builders: each value is an XML fragment, so test arguments stay `Sendable`.
enum Plist {
    static let restrictions = """
        <dict>
            <key>BADownloadAllowance</key><integer>104857600</integer>
            <key>BAEssentialDownloadAllowance</key><integer>52428800</integer>
            <key>BADownloadDomainAllowList</key>
            <array><string>cdn.example.com</string><string>*.Assets.Example.com</string></array>
        </dict>
        """

    static let full: [(key: String, value: String)] = [
        ("CFBundleIdentifier", "<string>com.example.game</string>"),
        ("CFBundleShortVersionString", "<string>1.2.3</string>"),
        ("CFBundleVersion", "<string>123</string>"),
        ("BAAppGroupID", "<string>group.com.example.game</string>"),
        ("BAExtensionPath", "<string>./lib//libGameAssets.so</string>"),
        ("BAManifestURL", "<string>https://cdn.example.com/manifest.json</string>"),
        ("BAInitialDownloadRestrictions", restrictions),
        ("BAMaxInstallSize", "<integer>2147483648</integer>"),
        ("BAEssentialMaxInstallSize", "<integer>0</integer>"),
        ("SomethingElse", "<date>2024-01-01T00:00:00Z</date>"),
    ]

    static let minimal: [(key: String, value: String)] = [
        ("CFBundleIdentifier", "<string>com.example.min</string>"),
        ("CFBundleShortVersionString", "<string>1.0</string>"),
        ("CFBundleVersion", "<string>1</string>"),
        ("BAAppGroupID", "<string>group.min</string>"),
    ]

    static func xml(_ entries: [(key: String, value: String)]) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
        \(entries.map { "    <key>\($0.key)</key>\n    \($0.value)" }.joined(separator: "\n"))
        </dict>
        </plist>
        """
    }

    /// `entries` with `key` set to `value` (appended when absent), or removed when `value` is nil.
    static func setting(
        _ key: String, to value: String?, in entries: [(key: String, value: String)]
    ) -> [(
        key: String, value: String
    )] {
        var result = entries.filter { $0.key != key }
        if let value { result.append((key, value)) }
        return result
    }
}

@Suite struct AppBundleTests {
    func expectError(
        _ code: AppBundleError.Code, key: String?, in app: TempApp, containing parts: [String] = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> AppBundleError? {
        do {
            let bundle = try AppBundle.load(directory: app.directory)
            Issue.record("loaded \(bundle), expected \(code)", sourceLocation: sourceLocation)
            return nil
        } catch {
            #expect(error.code == code, sourceLocation: sourceLocation)
            #expect(error.path == app.plistPath, sourceLocation: sourceLocation)
            #expect(error.key == key, sourceLocation: sourceLocation)
            #expect(error.description.hasPrefix(app.plistPath + ": "), sourceLocation: sourceLocation)
            if let key { #expect(error.description.contains(key), sourceLocation: sourceLocation) }
            for part in parts {
                #expect(error.description.contains(part), "\(error)", sourceLocation: sourceLocation)
            }
            return error
        }
    }

    @Test func fullXMLPlist() throws {
        let app = try TempApp()
        defer { app.remove() }
        try app.write(xml: Plist.full)
        let bundle = try AppBundle.load(directory: app.directory)
        #expect(bundle.directory == app.directory)
        #expect(bundle.infoPlistPath == app.plistPath)
        #expect(bundle.bundleIdentifier == "com.example.game")
        #expect(bundle.version == "1.2.3")
        #expect(bundle.appGroupIdentifier == "group.com.example.game")
        #expect(bundle.extensionPath == app.directory + "/lib/libGameAssets.so")
        #expect(bundle.manifestURL == "https://cdn.example.com/manifest.json")
        #expect(bundle.downloadAllowance == 104_857_600)
        #expect(bundle.essentialDownloadAllowance == 52_428_800)
        #expect(bundle.domainAllowList == ["cdn.example.com", "*.assets.example.com"])
        #expect(bundle.maxInstallSize == 2_147_483_648)
        #expect(bundle.essentialMaxInstallSize == 0)
    }

    @Test func binaryPlistLoadsTheSame() throws {
        let xmlApp = try TempApp()
        let binaryApp = try TempApp()
        defer {
            xmlApp.remove()
            binaryApp.remove()
        }
        try xmlApp.write(xml: Plist.full)
        let decoded = try PropertyListSerialization.propertyList(
            from: Data(Plist.xml(Plist.full).utf8), options: [], format: nil)
        let binary = try PropertyListSerialization.data(fromPropertyList: decoded, format: .binary, options: 0)
        #expect(binary.starts(with: Array("bplist00".utf8)))
        try binaryApp.write(binary)

        let fromXML = try AppBundle.load(directory: xmlApp.directory)
        let fromBinary = try AppBundle.load(directory: binaryApp.directory)
        #expect(fromBinary.extensionPath == binaryApp.directory + "/lib/libGameAssets.so")
        // Same values apart from where each app lives.
        #expect(fromBinary.bundleIdentifier == fromXML.bundleIdentifier)
        #expect(fromBinary.version == fromXML.version)
        #expect(fromBinary.appGroupIdentifier == fromXML.appGroupIdentifier)
        #expect(fromBinary.manifestURL == fromXML.manifestURL)
        #expect(fromBinary.downloadAllowance == fromXML.downloadAllowance)
        #expect(fromBinary.essentialDownloadAllowance == fromXML.essentialDownloadAllowance)
        #expect(fromBinary.domainAllowList == fromXML.domainAllowList)
        #expect(fromBinary.maxInstallSize == fromXML.maxInstallSize)
        #expect(fromBinary.essentialMaxInstallSize == fromXML.essentialMaxInstallSize)
    }

    @Test func minimalPlistHasNoOptionalValues() throws {
        let app = try TempApp()
        defer { app.remove() }
        try app.write(xml: Plist.setting("CFBundleShortVersionString", to: nil, in: Plist.minimal))
        let bundle = try AppBundle.load(directory: app.directory + "/./")
        #expect(bundle.directory == app.directory)
        #expect(bundle.version == "1")  // CFBundleVersion when there is no short version
        #expect(bundle.extensionPath == nil)
        #expect(bundle.manifestURL == nil)
        #expect(bundle.downloadAllowance == nil)
        #expect(bundle.essentialDownloadAllowance == nil)
        #expect(bundle.domainAllowList == nil)
        #expect(bundle.maxInstallSize == nil)
        #expect(bundle.essentialMaxInstallSize == nil)
    }

    @Test func loopbackHTTPManifestIsAllowed() throws {
        let app = try TempApp()
        defer { app.remove() }
        try app.write(
            xml: Plist.setting("BAManifestURL", to: "<string>http://127.0.0.1:8080/m.json</string>", in: Plist.minimal))
        #expect(try AppBundle.load(directory: app.directory).manifestURL == "http://127.0.0.1:8080/m.json")
    }

    @Test(arguments: ["CFBundleIdentifier", "CFBundleShortVersionString", "BAAppGroupID"])
    func missingRequiredKey(_ key: String) throws {
        let app = try TempApp()
        defer { app.remove() }
        var entries = Plist.setting(key, to: nil, in: Plist.full)
        if key == "CFBundleShortVersionString" { entries = Plist.setting("CFBundleVersion", to: nil, in: entries) }
        try app.write(xml: entries)
        let error = expectError(.missingKey, key: key, in: app, containing: ["is required"])
        if key == "CFBundleShortVersionString" { #expect(error?.description.contains("CFBundleVersion") == true) }
    }

    @Test func wrongTypeMessageIsExact() throws {
        let app = try TempApp()
        defer { app.remove() }
        try app.write(xml: Plist.setting("BAAppGroupID", to: "<integer>7</integer>", in: Plist.full))
        let error = expectError(.wrongType, key: "BAAppGroupID", in: app)
        #expect(error?.description == "\(app.plistPath): BAAppGroupID must be a string, found an integer")
    }

    struct WrongType: Sendable, CustomTestStringConvertible {
        var key: String
        var value: String
        var reportedKey: String
        var expected: String
        var found: String
        var testDescription: String { "\(reportedKey) = \(found)" }
    }

    static func restrictions(_ key: String, _ value: String) -> String {
        "<dict><key>\(key)</key>\(value)</dict>"
    }

    static let wrongTypes: [WrongType] = [
        .init(
            key: "CFBundleIdentifier", value: "<data>AAE=</data>", reportedKey: "CFBundleIdentifier",
            expected: "a string", found: "data"),
        .init(
            key: "CFBundleShortVersionString", value: "<real>1.5</real>", reportedKey: "CFBundleShortVersionString",
            expected: "a string", found: "a real number"),
        .init(
            key: "CFBundleVersion", value: "<integer>3</integer>", reportedKey: "CFBundleVersion",
            expected: "a string", found: "an integer"),
        .init(
            key: "BAExtensionPath", value: "<array/>", reportedKey: "BAExtensionPath", expected: "a string",
            found: "an array"),
        .init(
            key: "BAManifestURL", value: "<true/>", reportedKey: "BAManifestURL", expected: "a string",
            found: "a boolean"),
        .init(
            key: "BAMaxInstallSize", value: "<string>10</string>", reportedKey: "BAMaxInstallSize",
            expected: "a non-negative integer (bytes)", found: "a string"),
        .init(
            key: "BAEssentialMaxInstallSize", value: "<real>4</real>", reportedKey: "BAEssentialMaxInstallSize",
            expected: "a non-negative integer (bytes)", found: "a real number"),
        .init(
            key: "BAInitialDownloadRestrictions", value: "<array/>", reportedKey: "BAInitialDownloadRestrictions",
            expected: "a dictionary", found: "an array"),
        .init(
            key: "BAInitialDownloadRestrictions",
            value: restrictions("BADownloadAllowance", "<false/>"),
            reportedKey: "BAInitialDownloadRestrictions.BADownloadAllowance",
            expected: "a non-negative integer (bytes)", found: "a boolean"),
        .init(
            key: "BAInitialDownloadRestrictions",
            value: restrictions("BAEssentialDownloadAllowance", "<dict/>"),
            reportedKey: "BAInitialDownloadRestrictions.BAEssentialDownloadAllowance",
            expected: "a non-negative integer (bytes)", found: "a dictionary"),
        .init(
            key: "BAInitialDownloadRestrictions",
            value: restrictions("BADownloadDomainAllowList", "<string>cdn.example.com</string>"),
            reportedKey: "BAInitialDownloadRestrictions.BADownloadDomainAllowList",
            expected: "an array of host strings", found: "a string"),
        .init(
            key: "BAInitialDownloadRestrictions",
            value: restrictions(
                "BADownloadDomainAllowList", "<array><string>a.com</string><integer>1</integer></array>"),
            reportedKey: "BAInitialDownloadRestrictions.BADownloadDomainAllowList",
            expected: "only strings", found: "an integer at index 1"),
    ]

    @Test(arguments: wrongTypes)
    func wrongType(_ example: WrongType) throws {
        let app = try TempApp()
        defer { app.remove() }
        var entries = Plist.setting(example.key, to: example.value, in: Plist.full)
        // A CFBundleVersion of the wrong type is only read when there is no short version.
        if example.key == "CFBundleVersion" {
            entries = Plist.setting("CFBundleShortVersionString", to: nil, in: entries)
        }
        try app.write(xml: entries)
        _ = expectError(
            .wrongType, key: example.reportedKey, in: app,
            containing: ["\(example.reportedKey) must", example.expected, "found \(example.found)"])
    }

    struct BadValue: Sendable, CustomTestStringConvertible {
        var key: String
        var value: String
        var reportedKey: String
        var mentions: String
        var testDescription: String { "\(reportedKey): \(mentions)" }
    }

    static let badValues: [BadValue] = [
        .init(
            key: "CFBundleIdentifier", value: "<string>com/example</string>", reportedKey: "CFBundleIdentifier",
            mentions: "contains '/'"),
        .init(
            key: "CFBundleIdentifier", value: "<string></string>", reportedKey: "CFBundleIdentifier",
            mentions: "is empty"),
        .init(
            key: "BAAppGroupID", value: "<string>group..x</string>", reportedKey: "BAAppGroupID",
            mentions: "contains '..'"),
        .init(
            key: "BAAppGroupID", value: "<string>group&#0;x</string>", reportedKey: "BAAppGroupID",
            mentions: "NUL byte"),
        .init(
            key: "CFBundleShortVersionString", value: "<string></string>", reportedKey: "CFBundleShortVersionString",
            mentions: "must not be empty"),
        .init(
            key: "BAManifestURL", value: "<string>http://cdn.example.com/m.json</string>", reportedKey: "BAManifestURL",
            mentions: "plain http"),
        .init(
            key: "BAManifestURL", value: "<string>ftp://cdn.example.com/m.json</string>", reportedKey: "BAManifestURL",
            mentions: "scheme 'ftp'"),
        .init(
            key: "BAManifestURL", value: "<string>manifest.json</string>", reportedKey: "BAManifestURL",
            mentions: "not an absolute"),
        .init(
            key: "BAMaxInstallSize", value: "<integer>-1</integer>", reportedKey: "BAMaxInstallSize",
            mentions: "found -1"),
        .init(
            key: "BAInitialDownloadRestrictions",
            value: restrictions("BADownloadAllowance", "<integer>-5</integer>"),
            reportedKey: "BAInitialDownloadRestrictions.BADownloadAllowance", mentions: "found -5"),
        .init(
            key: "BAEssentialMaxInstallSize", value: "<integer>18446744073709551615</integer>",
            reportedKey: "BAEssentialMaxInstallSize", mentions: "larger integer"),
        .init(
            key: "BAInitialDownloadRestrictions",
            value: restrictions("BADownloadDomainAllowList", "<array><string>cdn.example.com/path</string></array>"),
            reportedKey: "BAInitialDownloadRestrictions.BADownloadDomainAllowList",
            mentions: "'cdn.example.com/path'"),
        .init(
            key: "BAInitialDownloadRestrictions",
            value: restrictions("BADownloadDomainAllowList", "<array><string>a.*.example.com</string></array>"),
            reportedKey: "BAInitialDownloadRestrictions.BADownloadDomainAllowList",
            mentions: "'a.*.example.com'"),
    ]

    @Test(arguments: badValues)
    func badValue(_ example: BadValue) throws {
        let app = try TempApp()
        defer { app.remove() }
        try app.write(xml: Plist.setting(example.key, to: example.value, in: Plist.full))
        _ = expectError(.invalidValue, key: example.reportedKey, in: app, containing: [example.mentions])
    }

    @Test(
        "BADesktopEntry: the desktop file id, .desktop dropped; default the bundle identifier; a path is refused",
        arguments: [
            ("org.example.Game", "org.example.Game"), ("org.example.Game.desktop", "org.example.Game"),
            ("game_2-x", "game_2-x"), (nil, "com.example.min"), ("apps/game", nil), (".desktop", nil), ("a b", nil),
        ] as [(String?, String?)])
    func desktopEntry(_ value: String?, expected: String?) throws {
        let app = try TempApp()
        defer { app.remove() }
        try app.write(
            xml: Plist.setting("BADesktopEntry", to: value.map { "<string>\($0)</string>" }, in: Plist.minimal))
        guard let expected else {
            _ = expectError(.invalidValue, key: "BADesktopEntry", in: app, containing: ["desktop file id"])
            return
        }
        #expect(try AppBundle.load(directory: app.directory).desktopFileID == expected)
    }

    @Test(arguments: ["../libX.so", "lib/../../libX.so", "lib/../libX.so", "..", "/usr/lib/libX.so", ".", ""])
    func extensionPathMustStayInside(_ path: String) throws {
        let app = try TempApp()
        defer { app.remove() }
        try app.write(xml: Plist.setting("BAExtensionPath", to: "<string>\(path)</string>", in: Plist.full))
        let error = expectError(.invalidValue, key: "BAExtensionPath", in: app, containing: ["'\(path)'"])
        if path.contains("..") { #expect(error?.description.contains("must stay inside the app directory") == true) }
    }

    @Test func directoryWithoutInfoPlist() throws {
        let app = try TempApp()
        defer { app.remove() }
        _ = expectError(.missingInfoPlist, key: nil, in: app, containing: ["no Info.plist"])
    }

    @Test func missingDirectory() throws {
        let app = try TempApp()
        app.remove()
        _ = expectError(.missingInfoPlist, key: nil, in: app)
    }

    @Test(arguments: ["not a plist <", "<plist version=\"1.0\"><array/></plist>", ""])
    func malformedPlist(_ contents: String) throws {
        let app = try TempApp()
        defer { app.remove() }
        try app.write(Data(contents.utf8))
        _ = expectError(.malformedInfoPlist, key: nil, in: app)
    }

    @Test func topLevelArrayIsNamed() throws {
        let app = try TempApp()
        defer { app.remove() }
        try app.write(Data("<plist version=\"1.0\"><array/></plist>".utf8))
        _ = expectError(.malformedInfoPlist, key: nil, in: app, containing: ["dictionary", "found an array"])
    }

    /// The example in docs/info-plist.md loads as the doc says, so the doc stays true to the code.
    @Test func documentedExampleLoads() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/info-plist.md")
        let markdown = try String(contentsOf: docs, encoding: .utf8)
        let start = try #require(markdown.range(of: "```xml\n"))
        let end = try #require(markdown.range(of: "```", range: start.upperBound..<markdown.endIndex))
        let app = try TempApp()
        defer { app.remove() }
        try app.write(Data(markdown[start.upperBound..<end.lowerBound].utf8))
        let bundle = try AppBundle.load(directory: app.directory)
        #expect(bundle.extensionPath == app.directory + "/lib/libGameAssets.so")
        #expect(bundle.version == "1.2.3")
        #expect(bundle.downloadAllowance == 104_857_600)
        #expect(bundle.domainAllowList == ["cdn.example.com", "*.assets.example.com"])
        #expect(bundle.essentialMaxInstallSize == 536_870_912)
    }
}
