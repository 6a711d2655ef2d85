import BACore
import BAExtensionHost
import Foundation

/// Renders a run's result as a table or as one JSON object.
struct RunReport {
    let result: BAExtensionRunResult
    /// With `--repeat`: the time of every call, spawn to reap, as the host measured it.
    let timing: CallTiming?
    /// For a shouldDownload call: the IDs of the packs asked about, in order.
    let packs: [String]

    init(_ result: BAExtensionRunResult, timing: CallTiming? = nil, packs: [String] = []) {
        self.result = result
        self.timing = timing
        self.packs = packs
    }

    /// For a shouldDownload call that ended ok: each pack asked about and the answer.
    var packAnswers: [(id: String, download: Bool)] {
        guard let answers = result.shouldDownload, answers.count == packs.count else { return [] }
        return Array(zip(packs, answers)).map { (id: $0.0, download: $0.1) }
    }

    /// Downloads are a set: listed by identifier so equal sets print equally.
    var sortedDownloads: [DownloadDescription] { result.downloads.sorted { $0.identifier < $1.identifier } }

    var durationMilliseconds: Double { (result.duration.seconds * 1000).rounded(toPlaces: 3) }

    struct JSONReport: Encodable {
        struct Extension: Encodable {
            var name: String
            var version: String
            var abi: String
        }
        struct Rejected: Encodable {
            var download: DownloadJSON
            var code: Int
            var reason: String
        }
        struct Log: Encodable {
            var level: Int32
            var message: String
        }
        struct PackAnswer: Encodable {
            var assetPackID: String
            var download: Bool
        }
        var verdict: String
        var verdictDetail: String?
        var signal: Int32?
        var `extension`: Extension?
        var downloads: [DownloadJSON]
        var rejected: [Rejected]
        var returnedCount: Int
        var scheduled: [DownloadJSON]
        var cancelled: [String]
        var challengeDisposition: Int32?
        var shouldDownload: [PackAnswer]?
        var logs: [Log]
        var durationMs: Double
        var peakMemoryBytes: Int64?
        var output: String
        var calls: Int?
        var medianMs: Double?
        var p99Ms: Double?
    }

    func json() -> String {
        var signal: Int32? = nil
        if case .crashed(let number) = result.verdict { signal = number }
        let report = JSONReport(
            verdict: result.verdict.name, verdictDetail: result.verdict.detail, signal: signal,
            extension: result.identity.map {
                .init(name: $0.name, version: $0.version, abi: "\($0.abiMajor).\($0.abiMinor)")
            },
            downloads: sortedDownloads.map(DownloadJSON.init),
            rejected: result.rejected.map {
                .init(download: DownloadJSON($0.download), code: $0.code, reason: $0.reason)
            },
            returnedCount: result.returnedCount, scheduled: result.scheduled.map(DownloadJSON.init),
            cancelled: result.cancelled,
            challengeDisposition: result.challengeDisposition,
            shouldDownload: packs.isEmpty ? nil : packAnswers.map { .init(assetPackID: $0.id, download: $0.download) },
            logs: result.logs.map { .init(level: $0.level, message: $0.message) },
            durationMs: durationMilliseconds, peakMemoryBytes: result.peakMemoryBytes, output: result.output,
            calls: timing?.calls, medianMs: timing?.medianMilliseconds, p99Ms: timing?.p99Milliseconds)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(report) else { return "{\"verdict\": \"\(result.verdict.name)\"}" }
        return String(decoding: data, as: UTF8.self)
    }

    func table(verbose: Bool) -> String {
        var lines: [String] = []
        var header = "verdict: \(result.verdict)"
        if let identity = result.identity {
            header += "  (\(identity.name) \(identity.version), C ABI \(identity.abiMajor).\(identity.abiMinor))"
        }
        header += String(format: "  in %.1f ms", durationMilliseconds)
        if let peak = result.peakMemoryBytes {
            header += String(format: ", peak memory %.1f MiB", Double(peak) / 1_048_576)
        }
        lines.append(header)
        if let timing {
            lines.append(
                String(
                    format: "%d calls: median %.3f ms, p99 %.3f ms (spawn to reap, as the host made them)",
                    timing.calls, timing.medianMilliseconds, timing.p99Milliseconds))
        }
        if !result.downloads.isEmpty {
            lines.append("")
            lines.append("\(result.downloads.count) download\(result.downloads.count == 1 ? "" : "s"):")
            let rows =
                [["IDENTIFIER", "ESSENTIAL", "FILE SIZE", "PRIORITY", "APP GROUP", "URL"]]
                + sortedDownloads.map {
                    [
                        $0.identifier, $0.isEssential ? "yes" : "no", $0.fileSize > 0 ? String($0.fileSize) : "unknown",
                        String($0.priority),
                        $0.applicationGroupIdentifier ?? "-", $0.url,
                    ]
                }
            lines += Self.columns(rows)
        } else if !packs.isEmpty {
            if result.verdict == .ok {
                lines.append("")
                for answer in packAnswers {
                    lines.append("  \(answer.id): \(answer.download ? "download" : "declined")")
                }
            }
        } else if result.verdict == .ok {
            lines.append("no downloads returned")
        }
        if !result.rejected.isEmpty {
            lines.append("")
            lines.append("\(result.rejected.count) rejected (of \(result.returnedCount) returned):")
            for rejection in result.rejected.prefix(20) {
                lines.append("  code \(rejection.code): \(rejection.reason)")
            }
            if result.rejected.count > 20 { lines.append("  … and \(result.rejected.count - 20) more") }
        }
        if !result.scheduled.isEmpty {
            lines.append("")
            lines.append("scheduled through the manager: " + result.scheduled.map(\.identifier).joined(separator: ", "))
        }
        if !result.cancelled.isEmpty { lines.append("cancelled: " + result.cancelled.joined(separator: ", ")) }
        if let disposition = result.challengeDisposition { lines.append("challenge disposition: \(disposition)") }
        if !result.logs.isEmpty {
            lines.append("")
            lines.append("log:")
            let levels = ["debug", "info", "notice", "error"]
            for line in result.logs {
                let level = levels.indices.contains(Int(line.level)) ? levels[Int(line.level)] : String(line.level)
                lines.append("  [\(level)] \(line.message)")
            }
        }
        let output = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        if !output.isEmpty && (verbose || result.verdict != .ok) {
            lines.append("")
            lines.append("extension output:")
            lines += output.split(separator: "\n", omittingEmptySubsequences: false).suffix(40).map { "  " + $0 }
        }
        return lines.joined(separator: "\n")
    }

    static func columns(_ rows: [[String]]) -> [String] {
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            "  "
                + row.enumerated().map { index, cell in
                    index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
                }.joined(separator: "  ")
        }
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

extension Double {
    func rounded(toPlaces places: Int) -> Double {
        let scale = pow(10, Double(places))
        return (self * scale).rounded() / scale
    }
}
