import BACore
import BAPacks
import Foundation
import Testing

@testable import BADaemon

/// How one pack stands against its app's language (``PackService/LanguageChoice/fit(_:)``) and
/// which packs a switch waits for (``PackService/wantedByPolicy(_:)``), as tables.
@Suite("localized packs: a pack against the app's language")
struct PackLanguageFitTests {
    static func row(
        language: String?, policy: PackManifest.DownloadPolicy = .prefetch([.firstInstallation]),
        listed: Bool = true, requested: Bool = false, declined: Bool = false
    ) -> PackRow {
        var row = PackRow(app: "app", pack: "p")
        if listed {
            row.entry = .init(
                assetPackID: "p", version: 1, downloadSize: 1, downloadPolicy: policy,
                indexURL: "https://cdn.example.com/packs/p/1.json", indexSHA256: String(repeating: "a", count: 64),
                language: language)
        }
        row.requested = requested
        row.declined = declined
        return row
    }

    @Test(
        "fit",
        arguments: [
            (nil, "fr", PackService.LanguageFit.notLocalized),
            ("fr", "fr", .chosen),
            ("FR", "fr", .chosen),
            ("en", "fr", .other),
            ("en", nil, .other),
            ("f!r", "fr", .invalid),
            ("de-CH-1996", "de", .invalid),
        ] as [(String?, String?, PackService.LanguageFit)])
    func fit(_ language: String?, _ chosen: String?, _ expected: PackService.LanguageFit) {
        let choice = PackService.LanguageChoice(available: ["fr"], chosen: chosen)
        #expect(choice.fit(Self.row(language: language)) == expected)
    }

    @Test("a pack no longer listed is not localized, whatever it was")
    func unlisted() {
        #expect(PackService.LanguageChoice(chosen: "fr").fit(Self.row(language: nil, listed: false)) == .notLocalized)
    }

    @Test(
        "what a switch waits for: packs a policy installs without being asked, and those the app asked for",
        arguments: [
            (PackManifest.DownloadPolicy.essential([.firstInstallation]), false, false, true),
            (.prefetch([.firstInstallation]), false, false, true),
            (.prefetch([.subsequentUpdate]), false, false, false),
            (.onDemand, false, false, false),
            (.onDemand, true, false, true),
            (.prefetch([.firstInstallation]), false, true, false),
            (.essential([.firstInstallation]), true, true, true),
        ] as [(PackManifest.DownloadPolicy, Bool, Bool, Bool)])
    func wanted(_ policy: PackManifest.DownloadPolicy, _ requested: Bool, _ declined: Bool, _ expected: Bool) {
        #expect(
            PackService.wantedByPolicy(
                Self.row(language: "fr", policy: policy, requested: requested, declined: declined))
                == expected)
    }
}
