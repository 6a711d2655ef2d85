import BAPackManifest
import Testing

/// Which packs of a self-hosted manifest `allDownloads(for:)` gives, and which are essential
/// (``SelfHostedPackRule``): every content request against every kind of policy, and the
/// language rule.
@Suite("self-hosted packs: which are downloaded, which are essential")
struct SelfHostedPackRuleTests {
    typealias Occasion = SelfHostedPackRule.Occasion

    /// `E`/`P` essential/prefetch with (f)irstInstallation, (u)bsequentUpdate or both.
    static let policies: [(String, PackDownloadPolicy)] = [
        ("Ef", .essential([.firstInstallation])), ("Eu", .essential([.subsequentUpdate])),
        ("Efu", .essential([.firstInstallation, .subsequentUpdate])), ("Pf", .prefetch([.firstInstallation])),
        ("Pu", .prefetch([.subsequentUpdate])), ("Pfu", .prefetch([.firstInstallation, .subsequentUpdate])),
        ("D", .onDemand),
    ]

    /// The expected answer per policy, in ``policies``' order: `E` essential, `d` downloaded (not
    /// essential), `-` not downloaded.
    static let expectations: [(Occasion, String)] = [
        (.app, "ddddddd"),
        (.install, "E-Ed-d-"),
        (.update, "-EE-dd-"),
        (.periodic, "dddddd-"),
        (.languageChange, "dddddd-"),
    ]

    @Test("the table", arguments: expectations.map(\.0))
    func table(_ occasion: Occasion) throws {
        let row = try #require(Self.expectations.first { $0.0 == occasion }?.1)
        for ((name, policy), expected) in zip(Self.policies, row) {
            let answer = SelfHostedPackRule.essential(policy, on: occasion)
            let got: Character = answer == nil ? "-" : answer! ? "E" : "d"
            #expect(got == expected, "\(occasion) \(name)")
        }
        #expect(Set(Self.expectations.map(\.0)) == Set(Occasion.allCases))
    }

    @Test("a localized pack only in the resolved language; an unlocalized one always")
    func languages() {
        #expect(SelfHostedPackRule.fits(language: nil, resolved: nil))
        #expect(SelfHostedPackRule.fits(language: nil, resolved: "fr"))
        #expect(SelfHostedPackRule.fits(language: "fr", resolved: "fr"))
        #expect(!SelfHostedPackRule.fits(language: "fr", resolved: "en"))
        #expect(!SelfHostedPackRule.fits(language: "fr", resolved: nil))
        let prefetch = PackDownloadPolicy.prefetch([.firstInstallation])
        #expect(
            SelfHostedPackRule.download(policy: prefetch, language: "de", on: .install, resolvedLanguage: "de")
                == false)
        #expect(
            SelfHostedPackRule.download(policy: prefetch, language: "de", on: .install, resolvedLanguage: "en")
                == nil)
        #expect(
            SelfHostedPackRule.download(policy: .onDemand, language: nil, on: .app, resolvedLanguage: nil) == false)
        #expect(
            SelfHostedPackRule.download(policy: .onDemand, language: "de", on: .app, resolvedLanguage: "en") == nil)
    }
}
