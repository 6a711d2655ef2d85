/// The languages of localized asset packs (Apple's OS 27 `language` of a pack), as rules without
/// I/O, table-tested in `PackLanguageTests`: which BCP-47 tags are taken, how a locale name of the
/// environment becomes one, the user's preferred languages from the environment in glibc's order,
/// and which of the languages an app's packs are available in is chosen (Apple's fallback order).
package enum PackLanguage {
    /// The longest language a download manifest may give (bytes): a bound checked before the
    /// shape (a shaped tag is at most 12: `zh-Hans-419`); 35 is the length RFC 5646 asks
    /// implementations to handle at least.
    package static let maximumLength = 35

    /// `tag` as a BCP-47 language tag of the shape Background Assets takes, canonical case, or
    /// nil: a language (2 or 3 letters, ISO 639), then optionally a script (4 letters, title-cased:
    /// `Hant`), then optionally a region (2 letters, upper-cased: `GB`, or 3 digits: `419`),
    /// split by `-` (`en-gb` → `en-GB`, `zh-hans-vn` → `zh-Hans-VN`). Apple: "Background Assets
    /// only supports language, region, and script": variants, extensions, private-use and
    /// grandfathered tags are refused.
    package static func canonical(_ tag: String) -> String? {
        guard (2...maximumLength).contains(tag.utf8.count) else { return nil }
        let subtags = tag.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard (1...3).contains(subtags.count) else { return nil }
        let language = subtags[0]
        guard (2...3).contains(language.count), language.allSatisfy(isLetter) else { return nil }
        var result = [String(decoding: language.map(lowercased), as: UTF8.self)]
        var rest = subtags.dropFirst()
        if let script = rest.first, script.count == 4, script.allSatisfy(isLetter) {
            let lower = String(decoding: script.map(lowercased), as: UTF8.self)
            result.append(lower.prefix(1).uppercased() + lower.dropFirst())
            rest = rest.dropFirst()
        }
        if let region = rest.first {
            if region.count == 2, region.allSatisfy(isLetter) {
                result.append(String(decoding: region.map(lowercased), as: UTF8.self).uppercased())
            } else if region.count == 3, region.allSatisfy(isDigit) {
                result.append(String(decoding: region, as: UTF8.self))
            } else {
                return nil
            }
            rest = rest.dropFirst()
        }
        guard rest.isEmpty else { return nil }
        return result.joined(separator: "-")
    }

    /// Whether `tag` has the shape ``canonical(_:)`` takes.
    package static func isValid(_ tag: String) -> Bool { canonical(tag) != nil }

    /// The base language of a canonical tag: its first subtag (`en-GB` → `en`).
    package static func base(_ tag: String) -> String {
        String(tag.split(separator: "-", maxSplits: 1).first ?? Substring(tag))
    }

    /// A POSIX locale name (`en_GB.UTF-8`, `de_DE@euro`, `fr`) as a canonical tag (`en-GB`,
    /// `de-DE`, `fr`); nil for `C`, `POSIX` (and `C.UTF-8`), empty or malformed names.
    package static func fromLocaleName(_ name: String) -> String? {
        guard name.utf8.count <= 256 else { return nil }
        var text = Substring(name)
        if let at = text.firstIndex(of: "@") { text = text[..<at] }
        if let dot = text.firstIndex(of: ".") { text = text[..<dot] }
        guard !text.isEmpty, text != "C", text != "POSIX" else { return nil }
        return canonical(text.replacingUnderscores())
    }

    /// The user's preferred languages from an environment, as glibc's `gettext` reads it: the
    /// locale of messages is the first set and non-empty of `LC_ALL`, `LC_MESSAGES`, `LANG`; when
    /// it is `C` or `POSIX` (or none is set) there are none (glibc then ignores `LANGUAGE`);
    /// otherwise `LANGUAGE`'s colon-separated list when it is set and non-empty, else that locale.
    /// Each becomes a canonical tag (``fromLocaleName(_:)``); those that do not are left out, and
    /// each tag is kept once, in order. At most 32.
    package static func preferred(environment: [String: String]) -> [String] {
        let locale = ["LC_ALL", "LC_MESSAGES", "LANG"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
        guard let locale, fromLocaleName(locale) != nil else { return [] }
        let names: [Substring]
        if let list = environment["LANGUAGE"], !list.isEmpty, list.utf8.count <= 4096 {
            names = list.split(separator: ":")
        } else {
            names = [Substring(locale)]
        }
        var seen: Set<String> = []
        var result: [String] = []
        for name in names {
            guard let tag = fromLocaleName(String(name)), seen.insert(tag).inserted else { continue }
            result.append(tag)
            if result.count == 32 { break }
        }
        return result
    }

    /// The language chosen among `available` (the languages the app's localized packs are in),
    /// in Apple's fallback order: for the app's override if it has one, then for each preferred
    /// language in turn, the exact language, then its base language (`en-GB` → `en`, else
    /// another region of it such as `en-US`, the first in sorted order); then the app's primary
    /// language (`CFBundleDevelopmentRegion`) the same way; then the first available language
    /// in sorted order (unless `fallsBack` is false: then nil when nothing matched). Nil when
    /// nothing is available. Tags are compared canonical; the result is one of `available` as given.
    package static func resolve(
        available: some Collection<String>, preferred: [String], override: String? = nil, primary: String? = nil,
        fallsBack: Bool = true
    ) -> String? {
        var byTag: [String: String] = [:]
        for tag in available {
            guard let canonical = canonical(tag) else { continue }
            if let held = byTag[canonical], held <= tag { continue }
            byTag[canonical] = tag
        }
        guard !byTag.isEmpty else { return nil }
        let sorted = byTag.keys.sorted()
        let wanted = ([override].compactMap { $0 } + preferred + [primary].compactMap { $0 }).compactMap(canonical)
        for tag in wanted {
            if let exact = byTag[tag] { return exact }
            let base = base(tag)
            if let plain = byTag[base] { return plain }
            if let region = sorted.first(where: { Self.base($0) == base }) { return byTag[region] }
        }
        return fallsBack ? byTag[sorted[0]] : nil
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
}

extension Substring {
    fileprivate func replacingUnderscores() -> String {
        String(decoding: utf8.map { $0 == UInt8(ascii: "_") ? UInt8(ascii: "-") : $0 }, as: UTF8.self)
    }
}
