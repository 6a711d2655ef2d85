import Testing

@testable import BAExtensionRunner

/// Where the runner looks for the libBackgroundAssets.so it preloads and lets a call read: a build
/// folder, an installed prefix (scripts/install.sh), an older prefix layout.
@Suite struct InstallationTests {
    @Test func libraryFolders() {
        let table: [(String, [String])] = [
            ("/usr/bin/ba-extension-runner", ["/usr/bin", "/usr/lib/swift-background-assets", "/usr/lib"]),
            (
                "/opt/ba/bin/ba-extension-runner",
                ["/opt/ba/bin", "/opt/ba/lib/swift-background-assets", "/opt/ba/lib"]
            ),
            (
                "/src/ba/.build/debug/ba-extension-runner",
                ["/src/ba/.build/debug", "/src/ba/.build/lib/swift-background-assets", "/src/ba/.build/lib"]
            ),
            ("/ba-extension-runner", [""]),
            ("ba-extension-runner", []),
        ]
        for (executable, expected) in table {
            #expect(Installation.libraryDirectories(ofExecutable: executable) == expected, "\(executable)")
        }
    }
}
