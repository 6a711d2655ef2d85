import Testing

@testable import BADaemon

/// Consent on a metered network (``PackConsent``) and the sizes shown before a pack starts
/// (``PackSizes``), as rows.
@Suite("Pack consent and sizes")
struct PackConsentTests {
    typealias Hold = NetworkConditions.Hold

    struct Row: Sendable, CustomTestStringConvertible {
        var essential = false
        var urgent = false
        var bytes: Int64?
        var metered = true
        var background: Hold?
        var threshold: Int64 = 100
        var consent: Bool
        var expected: Hold?
        var testDescription: String {
            "\(essential ? "essential" : "not essential")\(urgent ? ", urgent" : ""), \(bytes.map(String.init) ?? "unplanned") bytes, "
                + "\(metered ? "metered" : "unmetered"), background hold \(background?.rawValue ?? "none"), "
                + "threshold \(threshold) → consent \(consent), \(expected?.rawValue ?? "go")"
        }
    }

    static let rows: [Row] = [
        // Over the threshold on a metered network: a prefetch or on-demand pack waits.
        Row(bytes: 101, consent: true, expected: .meteredNetwork),
        Row(bytes: .max, consent: true, expected: .meteredNetwork),
        // Not metered: needs consent, but goes.
        Row(bytes: 101, metered: false, consent: true, expected: nil),
        // At or under the threshold: today's rules (the background hold) alone.
        Row(bytes: 100, consent: false, expected: nil),
        Row(bytes: 0, threshold: 0, consent: false, expected: nil),
        Row(bytes: 1, threshold: 0, consent: true, expected: .meteredNetwork),
        Row(bytes: 100, background: .meteredNetwork, consent: false, expected: .meteredNetwork),
        // Essential: never needs consent; the background hold still applies to a background update.
        Row(essential: true, bytes: .max, consent: false, expected: nil),
        Row(essential: true, bytes: .max, background: .meteredNetwork, consent: false, expected: .meteredNetwork),
        // Asked for (urgent): consent given; nothing holds it.
        Row(urgent: true, bytes: .max, consent: false, expected: nil),
        Row(urgent: true, bytes: .max, background: .lowPowerMode, consent: false, expected: nil),
        Row(essential: true, urgent: true, bytes: .max, background: .offline, consent: false, expected: nil),
        // Not planned yet: only the index is fetched, which needs no consent.
        Row(bytes: nil, consent: false, expected: nil),
        // Another hold wins the name; the consent rule stays.
        Row(bytes: 101, background: .lowPowerMode, consent: true, expected: .lowPowerMode),
        Row(bytes: 101, metered: false, background: .captivePortal, consent: true, expected: .captivePortal),
        // A negative threshold (not from a settings file, which refuses it) counts as 0.
        Row(bytes: 1, threshold: -5, consent: true, expected: .meteredNetwork),
        Row(bytes: 0, threshold: .min, consent: false, expected: nil),
        // Never asks: the largest threshold.
        Row(bytes: .max, threshold: .max, consent: false, expected: nil),
    ]

    @Test("who needs consent, and what a job waits for", arguments: rows)
    func hold(_ row: Row) {
        let job = PackConsent.Job(essentialPolicy: row.essential, urgent: row.urgent, bytesToFetch: row.bytes)
        #expect(PackConsent.needsConsent(job, threshold: row.threshold) == row.consent)
        #expect(
            PackConsent.hold(of: job, backgroundHold: row.background, metered: row.metered, threshold: row.threshold)
                == row.expected)
    }

    typealias Known = PackSizes.Known

    @Test(
        "fetch and write bytes before a pack starts",
        arguments: [
            // Not listed: nothing to say.
            (Known(localVersion: 1, serverVersion: nil, manifestDownloadSize: nil), nil, nil),
            // Current: nothing to fetch or write.
            (Known(localVersion: 2, serverVersion: 2, manifestDownloadSize: 500), 0, 0),
            // Not local, or out of date, no index yet: the manifest's size (at most), write unknown.
            (Known(localVersion: nil, serverVersion: 2, manifestDownloadSize: 500), 500, nil),
            (Known(localVersion: 1, serverVersion: 2, manifestDownloadSize: 500), 500, nil),
            // The index read: its size and its files' bytes.
            (
                Known(
                    localVersion: nil, serverVersion: 2, manifestDownloadSize: 500,
                    index: .init(downloadSize: 400, fileBytes: 900)), 400, 900
            ),
            // Planned (an update's delta), part of it fetched.
            (
                Known(
                    localVersion: 1, serverVersion: 2, manifestDownloadSize: 500,
                    index: .init(downloadSize: 400, fileBytes: 900),
                    plan: .init(bytesToFetch: 50, bytesFetched: 20, bytesTotal: 900, bytesPresent: 850)), 30, 50
            ),
            // Hostile figures: never negative, never wrapped.
            (
                Known(
                    localVersion: nil, serverVersion: 2, manifestDownloadSize: 500,
                    plan: .init(bytesToFetch: .min, bytesFetched: .max, bytesTotal: .max, bytesPresent: .min)), 0,
                .max
            ),
            (Known(localVersion: nil, serverVersion: 2, manifestDownloadSize: -1), 0, nil),
        ] as [(Known, Int64?, Int64?)])
    func sizes(known: Known, fetch: Int64?, write: Int64?) {
        let sizes = PackSizes.sizes(known)
        #expect(sizes.fetch == fetch)
        #expect(sizes.write == write)
    }

    @Test("sums of a hostile index's sizes saturate instead of wrapping")
    func saturatingSum() {
        #expect(PackSizes.saturatingSum([1, 2, 3]) == 6)
        #expect(PackSizes.saturatingSum([Int64.max, 1]) == .max)
        #expect(PackSizes.saturatingSum([Int64.max / 2 + 1, Int64.max / 2 + 1, 5]) == .max)
        #expect(PackSizes.saturatingSum([Int64.min, -1]) == .min)
        #expect(PackSizes.saturatingSum([]) == 0)
    }
}
