import BACore
import BAExclusiveControl
import BAExtensionABI
internal import CBAExtension
internal import CFFI
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The state of one call into an extension, bound into every host-API closure as its user data.
/// This is the only place host functions find their context: the runner has no global state.
final class Invocation: @unchecked Sendable {
    /// What the extension may do right now.
    enum Phase: Equatable {
        case running(EntryPoint)
        case ended
    }

    let channel: Channel
    let request: RunRequest
    private let state: Mutex<State>
    private let lock: ExclusiveControlLock?
    private let lockError: String?
    /// Arena for the current downloads handed out by current_downloads (built once).
    private let arena = CArena()
    private let currentDownloads: [UnsafeMutablePointer<ba_download>]

    struct State {
        var phase: Phase = .ended
        var returned: UInt64 = 0
        /// Per-thread C copies of the last failure message (malloc'ed), replaced by that thread's
        /// next failure: what last_error_message hands out.
        var lastErrors: [pthread_t: (address: UInt, length: Int)] = [:]
    }

    init(channel: Channel, request: RunRequest) {
        self.channel = channel
        self.request = request
        self.state = Mutex(State())
        if request.lockPath.isEmpty {
            lock = nil
            lockError = "this call has no app group container, so there is no exclusive-control lock"
        } else {
            do {
                lock = try ExclusiveControlLock(path: request.lockPath)
                lockError = nil
            } catch {
                lock = nil
                lockError = "cannot open the exclusive-control lock \(request.lockPath): \(error)"
            }
        }
        currentDownloads = request.currentDownloads.map(arena.download)
    }

    var returnedCount: UInt64 { state.withLock { $0.returned } }

    func setPhase(_ phase: Phase) { state.withLock { $0.phase = phase } }

    /// A new entry-point call starts (the next of a request with several events): its phase, and
    /// a count of returned downloads of its own.
    func beginCall(_ entryPoint: EntryPoint) {
        state.withLock { state in
            state.phase = .running(entryPoint)
            state.returned = 0
        }
    }

    // MARK: Host functions. Each returns BA_OK or BA_FAILED with a code and a message.

    private func fail(_ code: Int32, _ message: String, _ codeOut: UnsafeMutablePointer<Int32>?) -> Int32 {
        codeOut?.pointee = code
        let thread = pthread_self()
        let copy = UInt(bitPattern: strdup(message))
        let length = message.utf8.count
        let previous = state.withLock { state in
            defer { state.lastErrors[thread] = (copy, length) }
            return state.lastErrors[thread]
        }
        if let previous { free(UnsafeMutableRawPointer(bitPattern: previous.address)) }
        return BA_FAILED
    }

    private func succeed(_ codeOut: UnsafeMutablePointer<Int32>?) -> Int32 {
        codeOut?.pointee = 0
        return BA_OK
    }

    private var phase: Phase { state.withLock { $0.phase } }

    func log(level: Int32, message: String) {
        guard phase != .ended else { return }
        channel.send(.log(level: level, message: message))
    }

    func addDownload(_ download: UnsafePointer<ba_download>?, _ codeOut: UnsafeMutablePointer<Int32>?) -> Int32 {
        guard phase == .running(.downloadsForRequest) else {
            return fail(BA_ERROR_CALL_NOT_VALID_NOW, "add_download is only valid inside downloads_for_request", codeOut)
        }
        let count = state.withLock { state -> UInt64 in
            state.returned += 1
            return state.returned
        }
        guard count <= UInt64(request.maximumDownloads) else {
            return fail(
                BA_ERROR_DOWNLOAD_INVALID,
                "one call may return at most \(request.maximumDownloads) downloads; this is number \(count)", codeOut)
        }
        // Bytes go straight from the extension's struct into the frame (no Strings here): the
        // host validates every field when it reads them.
        var violation: DownloadRules.Violation?
        channel.send(flush: false) { writer in
            writer.u8(RunnerMessage.downloadType)
            violation = writer.download(from: download)
            return violation == nil
        }
        if let violation { return fail(Int32(violation.code), violation.reason, codeOut) }
        return succeed(codeOut)
    }

    func scheduleDownload(_ download: UnsafePointer<ba_download>?, _ codeOut: UnsafeMutablePointer<Int32>?) -> Int32 {
        switch phase {
        case .ended:
            return fail(BA_ERROR_CALL_NOT_VALID_NOW, "the entry point has returned", codeOut)
        case .running(.downloadsForRequest):
            return fail(
                BA_ERROR_CALL_FROM_EXTENSION_NOT_ALLOWED,
                "scheduling through the download manager is refused while downloads(for:) runs; return the download from it instead",
                codeOut)
        case .running(.shouldDownload):
            return fail(
                BA_ERROR_CALL_NOT_VALID_NOW,
                "schedule_download is not valid inside should_download: it only answers whether the system downloads a pack",
                codeOut)
        case .running:
            switch readDownload(download) {
            case .success(let record):
                if let violation = DownloadRules.check(record) {
                    return fail(Int32(violation.code), violation.reason, codeOut)
                }
                channel.send(.scheduled(record))
                return succeed(codeOut)
            case .failure(let violation):
                return fail(Int32(violation.code), violation.reason, codeOut)
            }
        }
    }

    func cancelDownload(_ identifier: String, _ codeOut: UnsafeMutablePointer<Int32>?) -> Int32 {
        guard phase != .ended else { return fail(BA_ERROR_CALL_NOT_VALID_NOW, "the entry point has returned", codeOut) }
        guard phase != .running(.shouldDownload) else {
            return fail(
                BA_ERROR_CALL_NOT_VALID_NOW,
                "cancel_download is not valid inside should_download: it only answers whether the system downloads a pack",
                codeOut)
        }
        guard request.currentDownloads.contains(where: { $0.identifier == identifier }) else {
            return fail(
                BA_ERROR_DOWNLOAD_NOT_SCHEDULED, "no download with identifier '\(identifier)' is scheduled", codeOut)
        }
        channel.send(.cancelled(identifier: identifier))
        return succeed(codeOut)
    }

    func visitCurrentDownloads(
        _ visit: ba_download_visitor?, _ userData: UnsafeMutableRawPointer?, _ codeOut: UnsafeMutablePointer<Int32>?
    ) -> Int32 {
        guard phase != .ended else { return fail(BA_ERROR_CALL_NOT_VALID_NOW, "the entry point has returned", codeOut) }
        guard let visit else { return fail(BA_ERROR_DOWNLOAD_INVALID, "current_downloads needs a visitor", codeOut) }
        for download in currentDownloads { visit(userData, download) }
        return succeed(codeOut)
    }

    func acquireExclusiveControl(timeoutMilliseconds: Int64, _ codeOut: UnsafeMutablePointer<Int32>?) -> Int32 {
        guard phase != .ended else { return fail(BA_ERROR_CALL_NOT_VALID_NOW, "the entry point has returned", codeOut) }
        guard let lock else { return fail(BA_ERROR_NO_APP_GROUP_CONTAINER, lockError ?? "no lock", codeOut) }
        do {
            try lock.acquire(timeoutMilliseconds: timeoutMilliseconds)
            return succeed(codeOut)
        } catch .notAcquired {
            return fail(
                BA_ERROR_EXCLUSIVE_CONTROL_NOT_ACQUIRED,
                "exclusive control is held by another process; not acquired within \(timeoutMilliseconds) ms", codeOut)
        } catch {
            return fail(BA_ERROR_EXCLUSIVE_CONTROL_NOT_ACQUIRED, "exclusive control: \(error)", codeOut)
        }
    }

    func releaseExclusiveControl(_ codeOut: UnsafeMutablePointer<Int32>?) -> Int32 {
        guard let lock else { return fail(BA_ERROR_NO_APP_GROUP_CONTAINER, lockError ?? "no lock", codeOut) }
        do {
            try lock.release()
            return succeed(codeOut)
        } catch {
            return fail(BA_ERROR_EXCLUSIVE_CONTROL_NOT_ACQUIRED, "exclusive control: \(error)", codeOut)
        }
    }

    func useCredential(user: String, password: String, _ codeOut: UnsafeMutablePointer<Int32>?) -> Int32 {
        guard phase == .running(.downloadReceivedChallenge) else {
            return fail(
                BA_ERROR_CALL_NOT_VALID_NOW, "use_credential is only valid inside download_received_challenge", codeOut)
        }
        channel.send(.credential(user: user, password: password))
        return succeed(codeOut)
    }

    func lastErrorMessage(_ lengthOut: UnsafeMutablePointer<Int>?) -> UnsafePointer<CChar>? {
        // Borrowed until this thread's next failing host call, which frees and replaces it.
        let message = state.withLock { $0.lastErrors[pthread_self()] }
        lengthOut?.pointee = message?.length ?? 0
        return message.flatMap { UnsafePointer<CChar>(bitPattern: $0.address) }
    }
}
