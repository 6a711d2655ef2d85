import BACore
import BATestSupport
import BackgroundAssetsTesting
import Foundation
import Testing

/// The Apple-style self-hosted snippet (AppleStyleSelfHostedPacks.swift) as it runs: called
/// directly, and built as an extension library that the real runner loads, whose asset-pack
/// downloads reach the host with their flag (C ABI 1.2's BA_DOWNLOAD_FLAG_ASSET_PACK).
@Suite struct AppleStyleSelfHostedTests {
    static let sha = String(repeating: "5a", count: 32)
    static let manifest = Data(
        #"""
        {"assetPacks":[
         {"id":"tutorial","url":"http://127.0.0.1/game/packs/tutorial/2.json","version":2,"downloadSize":300,
          "downloadPolicy":{"essential":{"installationEventTypes":["firstInstallation"]}},
          "host":{"thirdParty":{}},"indexSHA256":"\#(sha)"},
         {"id":"levels","url":"http://127.0.0.1/game/packs/levels/1.json","version":1,"downloadSize":900,
          "downloadPolicy":{"prefetch":{"installationEventTypes":["firstInstallation","subsequentUpdate"]}},
          "host":{"thirdParty":{}},"indexSHA256":"\#(sha)"},
         {"id":"bonus","url":"http://127.0.0.1/game/packs/bonus/1.json","version":1,"downloadSize":50,
          "downloadPolicy":{"onDemand":{}},"host":{"thirdParty":{}},"indexSHA256":"\#(sha)"}]}
        """#.utf8)

    @Test("the snippet's extension returns the install's packs, the tutorial essential")
    func calledDirectly() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try directory.write("manifest.json", String(decoding: Self.manifest, as: UTF8.self))
        let downloads = SelfHostedPacksDownloader().downloads(
            for: .install, manifestURL: URL(fileURLWithPath: file),
            extensionInfo: BAAppExtensionInfo(
                restrictedDownloadSizeRemaining: nil, restrictedEssentialDownloadSizeRemaining: nil))
        let essential = Dictionary(uniqueKeysWithValues: downloads.map { ($0.identifier, $0.isEssential) })
        #expect(essential == ["tutorial": true, "levels": false])
        #expect(downloads.allSatisfy { $0.applicationGroupIdentifier == SelfHostedPacksDownloader.appGroupID })
        // A manifest that is not one: no downloads, no crash.
        let bad = try directory.write("bad.json", #"{"assetPacks":[{"id":"x"}]}"#)
        #expect(
            SelfHostedPacksDownloader().downloads(
                for: .install, manifestURL: URL(fileURLWithPath: bad),
                extensionInfo: BAAppExtensionInfo(
                    restrictedDownloadSizeRemaining: nil, restrictedEssentialDownloadSizeRemaining: nil)
            ).isEmpty)
    }

    @Test("built as an extension library, its asset-pack downloads cross the runner to the host as asset packs")
    func underTheHost() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let source = try String(
            contentsOfFile: BuildProducts.source("Tests/AppleCompatibilityTests/AppleStyleSelfHostedPacks.swift"),
            encoding: .utf8)
        let file = try directory.write(
            "SelfHosted.swift",
            source + """

                @_cdecl("ba_extension_descriptor")
                public func baExtensionDescriptor() -> UnsafeRawPointer {
                    BAExportExtension(SelfHostedPacksDownloader.self, name: "SelfHosted", version: "1.0.0")
                }

                """)
        let library = directory.path + "/libSelfHosted.so"
        let build = try await AppleCompatibilityTests.swiftc(["-emit-library", "-o", library, file])
        try #require(build.status == 0, "\(build.stderr)")
        let tester = try BAExtensionTester(
            libraryPath: library, runnerPath: BuildProducts.executable("ba-extension-runner"))

        let install = try await tester.downloads(for: .install, manifest: Self.manifest)
        #expect(install.verdict == .ok, "\(install.verdict) \(install.output)")
        #expect(install.identity?.abiMinor == 2)
        let returned = install.downloads.sorted { $0.identifier < $1.identifier }
        #expect(returned.map(\.identifier) == ["levels", "tutorial"])
        #expect(returned.allSatisfy { $0.isAssetPack && $0.sha256 == Self.sha })
        #expect(returned.map(\.isEssential) == [false, true])
        #expect(returned.map(\.fileSize) == [900, 300])
        #expect(returned.last?.url == "http://127.0.0.1/game/packs/tutorial/2.json")
        #expect(returned.allSatisfy { $0.applicationGroupIdentifier == "group.com.example.applestyle" })

        let update = try await tester.downloads(for: .update, manifest: Self.manifest)
        #expect(update.verdict == .ok)
        #expect(update.downloads.map(\.identifier) == ["levels"])
        #expect(update.downloads.first?.isAssetPack == true && update.downloads.first?.isEssential == false)
    }
}
