import BACore
internal import CBASystem
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

// How an ended call is judged: its verdict from what was read and how the runner ended, and
// the downloads it returned, validated.
extension SupervisedCall {
    /// Decides the verdict from what was read and how the process ended.
    func verdict(exitStatus status: Int32) -> BAExtensionVerdict {
        if killedAtDeadline { return .timedOut }
        if let protocolViolation { return .protocolError(reason: protocolViolation) }
        let signaled = status & 0x7f != 0 && status & 0x7f != 0x7f
        if signaled {
            let signal = status & 0x7f
            return ranOutOfMemory() ? .exceededMemory : .crashed(signal: signal)
        }
        let exitCode = (status >> 8) & 0xff
        if let failure {
            switch failure.kind {
            case .notALibrary:
                // A dependency the loader could not open inside the sandbox may be right there
                // outside it (a RUNPATH into a toolchain's folder): say so, and how to fix it.
                if let (name, found) = ELFRunPath.missingDependency(in: failure.message, library: libraryPath) {
                    return .notALibrary(
                        reason: failure.message + "; \(name) is at \(found), which the extension's RUNPATH names but "
                            + "the sandbox does not let it read: build with -no-toolchain-stdlib-rpath and an rpath to the "
                            + "installed runtime (docs/building-against-the-package.md), or ship \(name) in the extension's "
                            + "folder")
                }
                return .notALibrary(reason: failure.message)
            case .missingEntryPoint: return .missingEntryPoint(reason: failure.message)
            case .abiMismatch:
                return .abiMismatch(
                    found: "\(failure.foundMajor).\(failure.foundMinor)",
                    expected: "\(BAHostABI.major).\(BAHostABI.minor)")
            case .invalidRequest: return .protocolError(reason: failure.message)
            }
        }
        if !sawHello && exitCode == BA_RUNNER_EXIT_SANDBOX_UNAVAILABLE {
            let text = String(decoding: outputTail, as: UTF8.self)
            if let line = text.split(separator: "\n").last(where: { $0.hasPrefix(BA_RUNNER_SANDBOX_FAILURE_PREFIX) }) {
                return .sandboxUnavailable(reason: String(line.dropFirst(BA_RUNNER_SANDBOX_FAILURE_PREFIX.count)))
            }
        }
        if summary != nil && exitCode == 0 { return .ok }
        if ranOutOfMemory() { return .exceededMemory }
        if !sawHello { return .protocolError(reason: "the runner exited with status \(exitCode) before saying hello") }
        return .protocolError(
            reason: "the extension ended the process (exit status \(exitCode)) before the call returned")
    }

    /// Whether the output shows an allocation failure at the memory cap: the runner's crash line
    /// with the data segment within max(16 MiB, 10%) of the cap, or the Swift runtime's message.
    func ranOutOfMemory() -> Bool {
        let text = String(decoding: outputTail, as: UTF8.self)
        if text.contains("failed to allocate") || text.contains("Could not allocate memory") { return true }
        guard
            let line = text.split(separator: "\n").last(where: { $0.hasPrefix("[ba-extension-runner] fatal signal=") })
        else {
            return false
        }
        var fields: [Substring: Int64] = [:]
        for pair in line.split(separator: " ") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let value = Int64(parts[1]) { fields[parts[0]] = value }
        }
        guard let data = fields["vmdata_bytes"], let limit = fields["limit_bytes"], limit > 0 else { return false }
        return data >= limit - max(16 << 20, limit / 10)
    }

    /// Validates what was returned and fills in the result.
    mutating func finishDownloads() {
        result.returnedCount = Int(summary?.returnedCount ?? UInt64(received.count))
        result.peakMemoryBytes = summary.flatMap { $0.peakMemoryBytes >= 0 ? $0.peakMemoryBytes : nil }
        if let disposition = summary?.challengeDisposition, disposition >= 0 {
            result.challengeDisposition = disposition
        }
        if droppedLogs > 0 {
            result.logs.append(
                BAExtensionLogLine(
                    level: 3,
                    message:
                        "[host] \(droppedLogs) more log lines (\(droppedLogBytes) bytes) were dropped: a call keeps "
                        + "at most \(Self.logLimit) lines and \(Self.logByteLimit / 1024) KiB of log"))
        }
        // Downloads from a call that did not return are not a result: discard them.
        guard result.verdict == .ok else {
            result.scheduled = []
            result.cancelled = []
            result.shouldDownload = nil
            return
        }
        var contentRequest: Int32? = nil
        if case .contentRequest(let request, _, _, _, _) = events[callIndex] { contentRequest = request }
        if result.returnedCount > invocation.maximumDownloads {
            let reason =
                "the extension returned \(result.returnedCount) downloads; one call may return at most \(invocation.maximumDownloads), so the whole set is rejected"
            result.rejected = received.map { BARejectedDownload(download: $0, code: 0, reason: reason) }
            return
        }
        let validation = DownloadRules.validate(received, contentRequest: contentRequest)
        result.downloads = validation.accepted
        result.rejected = validation.rejected.map {
            BARejectedDownload(download: $0.download, code: $0.violation.code, reason: $0.violation.reason)
        }
        // The runner checks scheduled downloads too, but it shares a process with the extension:
        // check again, and report what fails instead of dropping it.
        var scheduled: [DownloadDescription] = []
        for download in result.scheduled {
            if let violation = DownloadRules.check(download) {
                result.rejected.append(
                    BARejectedDownload(
                        download: download, code: violation.code, reason: "scheduled: \(violation.reason)"))
            } else {
                scheduled.append(download)
            }
        }
        result.scheduled = scheduled
    }
}
