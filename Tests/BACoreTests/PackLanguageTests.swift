import BACore
import Testing

/// The rules of localized packs' languages (``PackLanguage``), as tables.
@Suite("Pack languages")
struct PackLanguageTests {
    @Test(
        "BCP-47 tags: the shape is checked, the case made canonical, length bounded",
        arguments: [
            ("en", "en"), ("en-GB", "en-GB"), ("en-gb", "en-GB"), ("EN-us", "en-US"), ("zh-hant-tw", "zh-Hant-TW"),
            ("fr", "fr"), ("es-419", "es-419"), ("gsw", "gsw"), ("sr-Latn", "sr-Latn"), ("ja", "ja"),
            ("es-US", "es-US"), ("zh-Hant", "zh-Hant"), ("zh-hans-vn", "zh-Hans-VN"),
        ] as [(String, String)])
    func canonical(_ tag: String, _ expected: String) {
        #expect(PackLanguage.canonical(tag) == expected)
    }

    @Test(
        "garbage is refused",
        arguments: [
            "", "e", "english", "en_GB", "en-", "-en", "en--GB", "en GB", "en-GB.UTF-8", "1en", "en-toolongsubtag",
            "x-private", "i-klingon", "en-GB\u{0}", "fr-ÇA", "../../etc", String(repeating: "en-", count: 20) + "GB",
            "en;rm -rf", "ена",
            // Apple takes language, script and region only: no variants or extensions.
            "de-CH-1996", "en-US-u-ca-gregory", "sl-rozaj", "en-Latn-US-x-foo", "en-GB-GB", "en-12", "en-Latn-Latn",
        ])
    func garbage(_ tag: String) {
        #expect(PackLanguage.canonical(tag) == nil)
        #expect(!PackLanguage.isValid(tag))
    }

    @Test("the longest shape is 12 bytes; a manifest's language is bounded at 35 before its shape is read")
    func bounded() {
        #expect(PackLanguage.canonical("zh-Hans-419") == "zh-Hans-419")
        #expect(PackLanguage.canonical("zzz-Hans-419")?.utf8.count == 12)
        #expect(PackLanguage.maximumLength == 35)
        #expect(PackLanguage.canonical(String(repeating: "a", count: 36)) == nil)
    }

    @Test(
        "locale names of the environment",
        arguments: [
            ("en_GB.UTF-8", "en-GB"), ("de_DE@euro", "de-DE"), ("fr", "fr"), ("pt_BR.utf8@x", "pt-BR"),
            ("C", nil), ("POSIX", nil), ("C.UTF-8", nil), ("", nil), ("en_GB.UTF-8.x", "en-GB"), ("garbage!", nil),
        ] as [(String, String?)])
    func localeNames(_ name: String, _ expected: String?) {
        #expect(PackLanguage.fromLocaleName(name) == expected)
    }

    @Test(
        "preferred languages in glibc's order",
        arguments: [
            // LANG alone.
            (["LANG": "en_GB.UTF-8"], ["en-GB"]),
            // LC_ALL beats LC_MESSAGES beats LANG.
            (["LANG": "de_DE.UTF-8", "LC_MESSAGES": "fr_FR.UTF-8", "LC_ALL": "it_IT.UTF-8"], ["it-IT"]),
            (["LANG": "de_DE.UTF-8", "LC_MESSAGES": "fr_FR.UTF-8"], ["fr-FR"]),
            // An empty one does not count.
            (["LANG": "de_DE.UTF-8", "LC_ALL": ""], ["de-DE"]),
            // LANGUAGE's list, when the locale is not C.
            (["LANG": "en_US.UTF-8", "LANGUAGE": "fr_CA:fr:en"], ["fr-CA", "fr", "en"]),
            // glibc ignores LANGUAGE under the C locale, or with no locale at all.
            (["LANG": "C", "LANGUAGE": "fr"], []),
            (["LC_ALL": "POSIX", "LANG": "fr_FR.UTF-8", "LANGUAGE": "fr"], []),
            (["LANGUAGE": "fr"], []),
            ([:], []),
            // Garbage in the list is left out, duplicates kept once.
            (["LANG": "en_GB.UTF-8", "LANGUAGE": "fr:::!!:fr_FR:fr:C"], ["fr", "fr-FR"]),
        ] as [([String: String], [String])])
    func preferred(_ environment: [String: String], _ expected: [String]) {
        #expect(PackLanguage.preferred(environment: environment) == expected)
    }

    @Test("at most 32 preferred languages")
    func preferredBounded() {
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        var codes: [String] = []
        for number in 0..<100 {
            codes.append("a" + String(letters[number % 26]) + String(letters[number / 26]))
        }
        let list = PackLanguage.preferred(environment: ["LANG": "en_US", "LANGUAGE": codes.joined(separator: ":")])
        #expect(list.count == 32)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var available: [String]
        var preferred: [String]
        var override: String? = nil
        var primary: String? = nil
        var fallsBack = true
        var expected: String?
        var testDescription: String {
            "\(available) preferred \(preferred) override \(override ?? "-") primary \(primary ?? "-") → \(expected ?? "nil")"
        }
    }

    @Test(
        "Apple's fallback order: exact, base language, primary language, first available",
        arguments: [
            // Exact.
            Case(available: ["en-GB", "en", "fr"], preferred: ["en-GB"], expected: "en-GB"),
            // Base language: en-GB → en.
            Case(available: ["en", "fr"], preferred: ["en-GB"], expected: "en"),
            // Base language, other region: en-GB → en-US.
            Case(available: ["en-US", "fr"], preferred: ["en-GB"], expected: "en-US"),
            // The first preferred that matches, exact or base, before the next preferred.
            Case(available: ["de", "en-US"], preferred: ["en-GB", "de"], expected: "en-US"),
            Case(available: ["de", "fr"], preferred: ["it", "fr-CA", "de"], expected: "fr"),
            // None matches: the app's primary language.
            Case(available: ["de", "fr"], preferred: ["ja"], primary: "fr", expected: "fr"),
            Case(available: ["de", "fr-FR"], preferred: ["ja"], primary: "fr", expected: "fr-FR"),
            // No primary either: the first available.
            Case(available: ["fr", "de"], preferred: ["ja"], expected: "de"),
            Case(available: ["fr", "de"], preferred: [], expected: "de"),
            // Unless asked not to fall back.
            Case(available: ["fr", "de"], preferred: ["ja"], fallsBack: false, expected: nil),
            // The override goes first.
            Case(available: ["en", "fr"], preferred: ["en"], override: "fr", expected: "fr"),
            Case(available: ["en", "fr-FR"], preferred: ["en"], override: "fr-CA", expected: "fr-FR"),
            // An override no pack has: the preferred languages decide.
            Case(available: ["en", "fr"], preferred: ["fr"], override: "ja", expected: "fr"),
            // Case does not matter; the result is as available gives it.
            Case(available: ["EN-gb"], preferred: ["en-GB"], expected: "EN-gb"),
            // Nothing available: nil, whatever is preferred.
            Case(available: [], preferred: ["en"], primary: "en", expected: nil),
            // Garbage available is ignored.
            Case(available: ["!!", "fr"], preferred: ["en"], expected: "fr"),
        ])
    func resolve(_ test: Case) {
        #expect(
            PackLanguage.resolve(
                available: test.available, preferred: test.preferred, override: test.override, primary: test.primary,
                fallsBack: test.fallsBack) == test.expected)
    }
}
