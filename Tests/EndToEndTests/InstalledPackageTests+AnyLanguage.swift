import BATestSupport
import Foundation
import Testing

extension InstalledPackageTests {
    /// docs/packs-from-any-language.md, run as written with PREFIX the scratch root's `usr` and BA
    /// the checkout: a C program built with the installed package's pkg-config file and a Python
    /// program from the checkout each install an on-demand pack with progress from a loopback
    /// server and read a file of it, a probe lists without marking the app launched, and the files
    /// are read again with basd stopped. The C program built there then runs with the toolchain
    /// hidden and needs nothing but libba_client and libc.
    @Test("docs/packs-from-any-language.md: C against the installed package, Python from the checkout")
    func packsFromAnyLanguage() async throws {
        let package = try InstalledPackage()
        defer { package.remove() }
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let work = try folder.directory("doc")
        let document = "docs/packs-from-any-language.md"
        let script = try DocScript(
            document: document, markdown: try String(contentsOfFile: BuildProducts.source(document), encoding: .utf8))
        let settings = folder.path + "/basd-config.json"
        try TestSettings.addLoopbackHosts(to: settings)
        let outcome = try await script.run(
            in: work, scratch: folder.path,
            environment: ["PREFIX": package.prefix, "BA": BuildProducts.packageRoot.path, "BA_CONFIG": settings],
            timeout: .seconds(300))
        guard outcome.succeeded else {
            Issue.record(Comment(rawValue: script.report(outcome, timeout: .seconds(300))))
            return
        }
        // What it linked: the package's library and libc, nothing of Swift.
        let ldd = try package.run("/usr/bin/ldd", [work + "/ensure_pack"])
        // (The run path is the pkg-config file's folder and `../../..`, as ${pcfiledir} makes it.)
        let loaded = ldd.stdout.split(separator: "\n").compactMap { line -> String? in
            guard line.contains("libba_client.so.1 => "), let path = line.split(separator: " ").dropFirst(2).first
            else { return nil }
            return URL(fileURLWithPath: String(path)).standardizedFileURL.path
        }
        #expect(loaded == [package.prefix + "/lib/swift-background-assets/libba_client.so.1"], "\(ldd.stdout)")
        #expect(!ldd.stdout.contains("libswiftCore"), "\(ldd.stdout)")
        #expect(!ldd.stdout.contains("not found"), "\(ldd.stdout)")
    }
}
