import BATestSupport
import Foundation
import Testing

/// What `scripts/install.sh --prefix DIR` installed, checked with the toolchain off the library
/// path. Building a release takes minutes, so the suite does not run the script: set
/// `BA_INSTALLED_PREFIX=DIR` after running it to check the result.
@Suite(
    "an installed release",
    .enabled(
        if: ProcessInfo.processInfo.environment["BA_INSTALLED_PREFIX"] != nil,
        "set BA_INSTALLED_PREFIX to a prefix scripts/install.sh installed into"))
struct InstalledReleaseTests {
    let prefix = ProcessInfo.processInfo.environment["BA_INSTALLED_PREFIX"] ?? "/nonexistent"

    /// Runs `path` with `LD_LIBRARY_PATH` unset and a PATH free of the toolchain.
    func run(_ path: String, _ arguments: [String]) throws -> ProcessOutput {
        try runProcessBlocking(
            "/usr/bin/env", ["-u", "LD_LIBRARY_PATH", "PATH=/usr/bin:/bin", path] + arguments, environment: [:],
            currentDirectory: nil)
    }

    @Test("ba and basd print their version; ldd names no toolchain library for them")
    func staticExecutables() throws {
        for name in ["ba", "basd"] {
            let version = try run(prefix + "/bin/" + name, ["--version"])
            #expect(version.status == 0, "\(name): \(version.stderr)")
            #expect(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines).first?.isNumber == true)
            let ldd = try run("/usr/bin/ldd", [prefix + "/bin/" + name])
            #expect(!ldd.stdout.contains("libswift") && !ldd.stdout.contains("not found"), "\(name): \(ldd.stdout)")
        }
        let runner = try run("/usr/bin/ldd", [prefix + "/bin/ba-extension-runner"])
        #expect(!runner.stdout.contains("not found"), "\(runner.stdout)")
        #expect(runner.stdout.contains("/lib/swift-background-assets/libswiftCore.so"), "\(runner.stdout)")
        for page in ["ba.1", "basd.1", "ba-install.1", "ba-uninstall.1", "ba-service-install.1"] {
            #expect(FileManager.default.fileExists(atPath: prefix + "/share/man/man1/" + page), "\(page)")
        }
        let unit = try String(contentsOfFile: prefix + "/lib/systemd/user/basd.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=" + prefix + "/bin/basd"), "\(unit)")
    }

    @Test("a C extension built against PREFIX/include runs in the installed runner")
    func cExtension() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let library = directory.path + "/libSample.so"
        let cc = try run(
            "/usr/bin/cc",
            [
                "-shared", "-fPIC", "-I", prefix + "/include", "-o", library,
                BuildProducts.source("Plugins/SampleCExtension/sample_c_extension.c"),
            ])
        #expect(cc.status == 0, "\(cc.stderr)")
        let result = try run(
            prefix + "/bin/ba",
            [
                "run-extension", library, "--event", "install", "--manifest",
                BuildProducts.source("Examples/Manifests/sample-manifest.json"),
            ])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    }
}
