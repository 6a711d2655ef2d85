import BAAssetServer
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `.deb` scripts/package-deb.sh built (`BA_PACKAGE`; scripts/test.sh builds one and sets it),
/// installed with dpkg into a scratch root, and used as a user would: its programs, the apps and
/// extensions built against it as docs/building-against-the-package.md says, and an app registered
/// in its drop-in folder, each run with the toolchain's runtime hidden (an empty tmpfs mounted over
/// it in a mount namespace of their own), as on a machine with only the package.
@Suite(
    "the .deb, installed",
    .enabled(
        if: InstalledPackage.deb != nil,
        "set BA_PACKAGE to a .deb scripts/package-deb.sh built (scripts/test.sh builds one)"),
    .enabled(if: InstalledPackage.canHideToolchain, "hiding the toolchain needs root (unshare -m, mount)"),
    .timeLimit(.minutes(10)))
struct InstalledPackageTests {
    @Test("dpkg installs it into a scratch root and removes every file; the sizes are within the targets")
    func installAndRemove() throws {
        let package = try InstalledPackage()
        defer { package.remove() }
        for path in [
            "usr/bin/ba", "usr/bin/basd", "usr/bin/ba-extension-runner", "usr/include/ba_extension.h",
            "usr/include/ba_client.h", "usr/lib/swift-background-assets/libba_client.so.1",
            "usr/lib/swift-background-assets/libBackgroundAssets.so", "usr/lib/swift-background-assets/libswiftCore.so",
            "usr/lib/swift-background-assets/modules/BackgroundAssets.swiftmodule",
            "usr/lib/systemd/user/basd.service", "usr/share/man/man1/ba-install.1.gz",
            "usr/share/man/man1/ba-extension-runner.1.gz", "usr/share/doc/swift-background-assets/copyright",
            "usr/share/doc/swift-background-assets/changelog.gz",
            "usr/share/doc/swift-background-assets/docs/operations.md.gz",
        ] {
            #expect(FileManager.default.fileExists(atPath: package.root + "/" + path), "\(path)")
        }
        // The C client's pkg-config file, in this architecture's folder (where Debian's pkg-config looks).
        let multiarch = try runProcessBlocking("/usr/bin/dpkg-architecture", ["-qDEB_HOST_MULTIARCH"]).stdout
        let pc = package.prefix + "/lib/" + multiarch.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(FileManager.default.fileExists(atPath: pc + "/pkgconfig/ba-client.pc"), "\(pc)")
        var isDirectory: ObjCBool = false
        #expect(
            FileManager.default.fileExists(
                atPath: package.prefix + "/share/background-assets/apps", isDirectory: &isDirectory)
                && isDirectory.boolValue)
        // The project's own license (Apache-2.0), never the placeholder, and its NOTICE.
        let copyright = try String(
            contentsOfFile: package.prefix + "/share/doc/swift-background-assets/copyright", encoding: .utf8)
        #expect(
            copyright.contains("Files: *\nCopyright: 2026 the swift-background-assets authors\nLicense: Apache-2.0\n")
                && !copyright.contains("LicenseRef"), "\(copyright)")
        #expect(
            FileManager.default.fileExists(
                atPath: package.prefix + "/share/doc/swift-background-assets/notices/swift-background-assets.NOTICE"))
        let unit = try String(contentsOfFile: package.prefix + "/lib/systemd/user/basd.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/bin/basd"), "\(unit)")
        // The timer beside the socket and the service, all three enabled for every user (the
        // vendor's *.wants links that `systemctl --global enable` would make): basd starts at login
        // and every 15 minutes, so a package's app gets its essentials before its first launch.
        let timer = try String(contentsOfFile: package.prefix + "/lib/systemd/user/basd.timer", encoding: .utf8)
        #expect(timer.contains("OnUnitInactiveSec=900s") && !timer.contains("[Install]"), "\(timer)")
        for (link, unit) in [
            ("default.target.wants/basd.service", "basd.service"), ("sockets.target.wants/basd.socket", "basd.socket"),
            ("timers.target.wants/basd.timer", "basd.timer"),
        ] {
            let path = package.prefix + "/lib/systemd/user/" + link
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path)
            #expect(target == "../" + unit, "\(link) -> \(target ?? "nothing")")
            #expect(FileManager.default.fileExists(atPath: path), "\(link) resolves")
        }
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/systemctl") {
            // systemd's own reading of the installed tree (offline: --root, no manager needed):
            // "static", enabled by the package's links, nothing for a user to enable.
            let enabled = try runProcessBlocking(
                "/usr/bin/systemctl",
                ["--root=" + package.root, "--global", "is-enabled", "basd.timer", "basd.socket", "basd.service"])
            #expect(enabled.stdout == "static\nstatic\nstatic\n", "\(enabled.stdout)\(enabled.stderr)")
        }

        // The issue's targets (issue 23): the .deb ≤ 25 MiB; installed ≤ 80 MiB until issue 33, whose
        // checks of network metadata, trust rules, typed pack model and swift-system file layer
        // (FileDescriptor, Errno, as that issue asks) added about 0.35 MiB to `ba` when 45 KiB of
        // the budget was left: 81 MiB then (82,223 KiB measured; 38.5 MB of it is Foundation's ICU
        // data, which the package cannot leave out). Issue 35's features (localized packs, the
        // Apple-shape manifest, consent on metered networks, `ba pack convert`/`serve`, overrides,
        // the C client library) added about 1 MiB, 0.95 MB of it to `ba` (83,241 KiB measured):
        // 82 MiB now. docs/operations.md says so.
        let control = try runProcessBlocking("/usr/bin/dpkg-deb", ["-f", package.deb, "Installed-Size", "Depends"])
        let installedKiB = control.stdout.split(separator: "\n").first.flatMap {
            Int($0.split(separator: " ").last ?? "")
        }
        #expect((installedKiB ?? .max) <= 82 * 1024, "\(control.stdout)")
        let debBytes = (try FileManager.default.attributesOfItem(atPath: package.deb)[.size] as? Int) ?? .max
        #expect(debBytes <= 25 * 1024 * 1024, "\(debBytes) bytes")
        // Direct dependencies only: libcurl's own (libssh2, libldap, …) are not named.
        #expect(control.stdout.contains("libcurl4") && !control.stdout.contains("libssh2"), "\(control.stdout)")

        // lintian, with the info tags too: nothing but what packaging/lintian-explained explains.
        let lintian = try runProcessBlocking(
            "/usr/bin/lintian",
            ["-I", "--suppress-tags-from-file", BuildProducts.source("packaging/lintian-explained"), package.deb])
        let findings = lintian.stdout.split(separator: "\n").filter { $0.dropFirst().hasPrefix(": ") }
        #expect(
            findings.isEmpty, "lintian (install it with scripts/install-deps.sh): \(lintian.stdout)\(lintian.stderr)")

        let removed = try package.dpkg(["--remove", "swift-background-assets"])
        #expect(removed.status == 0, "\(removed.stdout)\(removed.stderr)")
        let left = try runProcessBlocking("/usr/bin/find", [package.root + "/usr", "-not", "-type", "d"])
        #expect(left.stdout.isEmpty, "left behind: \(left.stdout)")
    }

    @Test("ba and basd run without the toolchain; no binary or library names a toolchain library or misses one")
    func runsWithoutTheToolchain() throws {
        let package = try InstalledPackage()
        defer { package.remove() }
        for name in ["ba", "basd"] {
            let version = try package.run(package.prefix + "/bin/" + name, ["--version"])
            #expect(version.status == 0, "\(name): \(version.stdout)\(version.stderr)")
            #expect(version.stdout.first?.isNumber == true, "\(name): \(version.stdout)")
        }
        let library = package.prefix + "/lib/swift-background-assets"
        let elves =
            ["ba", "basd", "ba-extension-runner"].map { package.prefix + "/bin/" + $0 }
            + (try FileManager.default.contentsOfDirectory(atPath: library)).filter { $0.hasSuffix(".so") }.map {
                library + "/" + $0
            }
        let ldd = try package.run("/usr/bin/ldd", elves)
        #expect(ldd.status == 0, "\(ldd.stderr)")
        #expect(!ldd.stdout.contains("not found"), "\(ldd.stdout)")
        #expect(!ldd.stdout.contains(InstalledPackage.toolchainRuntime), "\(ldd.stdout)")
        #expect(ldd.stdout.contains(library + "/libswiftCore.so"), "\(ldd.stdout)")
    }

    @Test("a C extension built against PREFIX/include runs in the installed runner")
    func cExtension() throws {
        let package = try InstalledPackage()
        defer { package.remove() }
        let library = package.root + "/libSample.so"
        let cc = try runProcessBlocking(
            "/usr/bin/cc",
            [
                "-shared", "-fPIC", "-I", package.prefix + "/include", "-o", library,
                BuildProducts.source("Plugins/SampleCExtension/sample_c_extension.c"),
            ])
        #expect(cc.status == 0, "\(cc.stderr)")
        let result = try package.run(
            package.prefix + "/bin/ba",
            [
                "run-extension", library, "--event", "install", "--manifest",
                BuildProducts.source("Examples/Manifests/sample-manifest.json"),
            ])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    }

    /// docs/building-against-the-package.md, run as written with PREFIX the scratch root's `usr`;
    /// what it built then runs without the toolchain; and its extension, in an app registered in
    /// the package's drop-in folder, is installed by the installed basd (the extension called in
    /// basd's sandbox, the essential file downloaded and handed to it) and uninstalled when the
    /// registration goes.
    @Test(
        "the documented builds run without the toolchain; an app registered in the drop-in folder is installed by the installed basd and uninstalled when its registration goes"
    )
    func documentedBuildsAndDropIn() async throws {
        let package = try InstalledPackage()
        defer { package.remove() }
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let work = try folder.directory("doc")
        let document = "docs/building-against-the-package.md"
        let script = try DocScript(
            document: document, markdown: try String(contentsOfFile: BuildProducts.source(document), encoding: .utf8))
        let outcome = try await script.run(
            in: work, scratch: folder.path, environment: ["PREFIX": package.prefix], timeout: .seconds(480))
        guard outcome.succeeded else {
            Issue.record(Comment(rawValue: script.report(outcome, timeout: .seconds(480))))
            return
        }

        // What the doc built, run as on a machine with only the package.
        let app = try package.run(work + "/hello-app", [])
        #expect(app.status == 0 && app.stdout.contains("hello-app: built against BackgroundAssets"), "\(app)")
        let game = try package.run(work + "/HelloGame/.build/release/hello-game", [])
        #expect(game.status == 0 && game.stdout.contains("hello-app: built against BackgroundAssets"), "\(game)")
        for library in [work + "/libHello.so", work + "/HelloGame/.build/release/libHelloExtension.so"] {
            let call = try package.run(
                package.prefix + "/bin/ba",
                ["run-extension", library, "--event", "install", "--manifest", work + "/manifest.txt", "--json"])
            #expect(call.status == 0 && call.stdout.contains("\"hello\""), "\(library): \(call.stdout)\(call.stderr)")
        }

        // The app, registered in the package's drop-in folder, its extension the doc's.
        let www = try folder.directory("www")
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: www + "/hello.txt"))
        let server = try await AssetServer.start(root: URL(fileURLWithPath: www))
        defer { Task { try? await server.shutdown() } }
        try Data("hello 6 \(server.url("/hello.txt"))\n".utf8).write(to: URL(fileURLWithPath: www + "/manifest.txt"))
        let appDirectory = try folder.directory("HelloApp")
        try FileManager.default.createDirectory(atPath: appDirectory + "/lib", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: work + "/libHello.so", toPath: appDirectory + "/lib/libHello.so")
        let info: [String: Any] = [
            "CFBundleIdentifier": "com.example.hello", "CFBundleShortVersionString": "1.0",
            "BAAppGroupID": "group.com.example.hello", "BAExtensionPath": "lib/libHello.so",
            "BAManifestURL": server.url("/manifest.txt"),
        ]
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: appDirectory + "/Info.plist"))
        let share = package.prefix + "/share"
        let daemon = try await DaemonProcess.start(
            environment: ["XDG_DATA_DIRS": share, "XDG_DATA_HOME": folder.path + "/home-share"],
            launcher: InstalledPackage.hidingToolchain, executable: package.prefix + "/bin/basd")
        defer { daemon.kill() }
        let registration = share + "/background-assets/apps/com.example.hello"
        try FileManager.default.createSymbolicLink(atPath: registration, withDestinationPath: appDirectory)

        let apps = { try await offThePool { try package.apps(daemon) } }
        try await poll("the installed basd to install the registered app") {
            try await apps()["com.example.hello"] != nil
        }
        try await poll("the extension, in basd's sandbox, to get the essential file") {
            daemon.standardError.contains("hello arrived at")
        }
        #expect(await daemon.logged("app discovery: \(registration): com.example.hello 1.0 installed"))

        try FileManager.default.removeItem(atPath: registration)
        try await poll("the app to be uninstalled once its registration is gone") {
            try await apps()["com.example.hello"] == nil
        }
    }

    /// Polls `condition` every 100 ms for at most `seconds` (generous: this is no timing test).
    func poll(_ what: String, seconds: Int = 120, _ condition: () async throws -> Bool) async throws {
        for _ in 0..<(seconds * 10) {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw HarnessError("gave up waiting for \(what)")
    }
}

/// One installation of the package with dpkg into a scratch root of its own.
struct InstalledPackage {
    /// The package scripts/package-deb.sh built.
    static let deb = ProcessInfo.processInfo.environment["BA_PACKAGE"]

    /// The folder this test process loaded its Swift runtime from: the toolchain's.
    static let toolchainRuntime: String = {
        // Read to the end: /proc files have no size, and String(contentsOfFile:) reads nothing of them.
        let data = FileHandle(forReadingAtPath: "/proc/self/maps")?.readDataToEndOfFile() ?? Data()
        let maps = String(decoding: data, as: UTF8.self)
        for line in maps.split(separator: "\n") where line.hasSuffix("/libswiftCore.so") {
            guard let slash = line.firstIndex(of: "/"), let last = line.lastIndex(of: "/") else { continue }
            return String(line[slash..<last])
        }
        return "/nonexistent"
    }()

    /// A command prefix that runs the rest with ``toolchainRuntime`` hidden under an empty tmpfs,
    /// in a mount namespace of its own (so nothing else sees it), exec'ing the command.
    static let hidingToolchain = [
        "/usr/bin/unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
        #"mount -t tmpfs -o size=64k,mode=0555 hidden "$0" && exec "$@""#, toolchainRuntime,
    ]

    static let canHideToolchain: Bool = {
        guard getuid() == 0 else { return false }
        let probe = try? runProcessBlocking(hidingToolchain[0], Array(hidingToolchain.dropFirst()) + ["/bin/true"])
        return probe?.status == 0
    }()

    let directory: TemporaryDirectory
    let deb: String
    /// The scratch root dpkg installed into, and its `usr`.
    var root: String { directory.path + "/root" }
    var prefix: String { root + "/usr" }

    init() throws {
        directory = try TemporaryDirectory()
        deb = Self.deb ?? "/nonexistent"
        // An empty dpkg database of the root's own; the package's dependencies are this machine's.
        for folder in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers"] {
            try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        }
        try Data().write(to: URL(fileURLWithPath: root + "/var/lib/dpkg/status"))
        let installed = try dpkg(["--force-depends", "--install", deb])
        guard installed.status == 0 else {
            throw HarnessError("dpkg --install failed: \(installed.stdout)\(installed.stderr)")
        }
    }

    /// dpkg on the scratch root.
    func dpkg(_ arguments: [String]) throws -> ProcessOutput {
        try runProcessBlocking(
            "/usr/bin/dpkg", ["--root=" + root, "--log=" + directory.path + "/dpkg.log"] + arguments,
            environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
    }

    /// Runs `path` with the toolchain's runtime hidden, `LD_LIBRARY_PATH` unset and a PATH of the
    /// system's folders only.
    func run(_ path: String, _ arguments: [String]) throws -> ProcessOutput {
        try runProcessBlocking(
            "/usr/bin/env",
            ["-u", "LD_LIBRARY_PATH", "PATH=/usr/bin:/bin"] + Self.hidingToolchain + [path] + arguments)
    }

    /// `ba apps --json` of the installed ba, by bundle identifier.
    func apps(_ daemon: DaemonProcess) throws -> [String: [String: Any]] {
        let listed = try run(prefix + "/bin/ba", ["apps", "--json", "--socket", daemon.socketPath])
        guard listed.status == 0 else { throw HarnessError("ba apps failed: \(listed.stdout)\(listed.stderr)") }
        let object = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8))
        let list = (object as? [[String: Any]]) ?? ((object as? [String: Any])?["apps"] as? [[String: Any]]) ?? []
        return Dictionary(
            list.map { (($0["bundleIdentifier"] as? String) ?? "", $0) }, uniquingKeysWith: { a, _ in a })
    }

    func remove() { directory.remove() }
}
