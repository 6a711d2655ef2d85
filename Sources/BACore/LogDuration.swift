/// A duration as log lines and messages show it: rounded to what a person reads, with its unit.
///
/// | duration | text |
/// |---|---|
/// | 0.6198199774855717 s | `0.6 s` |
/// | 0.04 s | `0.04 s` |
/// | 12.5 s | `13 s` |
/// | 600 s | `10 min` |
/// | 1 h 30 min | `1 h 30 min` |
///
/// Below 10 s one decimal (two below 0.1 s, so a short backoff does not read `0.0 s`), then whole
/// seconds, then minutes from 2 min, hours from 2 h.
package enum LogDuration {
    /// The text for `duration`; a negative one is shown as zero.
    package static func text(_ duration: Duration) -> String {
        let components = duration.components
        let seconds = max(0, Double(components.seconds) + Double(components.attoseconds) / 1e18)
        if seconds < 0.1 { return "\(decimal(seconds, places: 2)) s" }
        if seconds < 9.95 { return "\(decimal(seconds, places: 1)) s" }
        let whole = Int(seconds.rounded())
        if whole < 120 { return "\(whole) s" }
        let minutes = Int((seconds / 60).rounded())
        if minutes < 120 { return "\(minutes) min" }
        let hours = minutes / 60
        let rest = minutes % 60
        return rest == 0 ? "\(hours) h" : "\(hours) h \(rest) min"
    }

    /// `value` with exactly `places` decimals, no exponent ("0.60" trims to "0.6"; "0.00" to "0").
    private static func decimal(_ value: Double, places: Int) -> String {
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = Int((value * scale).rounded())
        let integer = scaled / Int(scale)
        var fraction = String(scaled % Int(scale))
        while fraction.count < places { fraction = "0" + fraction }
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return fraction.isEmpty ? "\(integer)" : "\(integer).\(fraction)"
    }
}
