import BAHashing
internal import CBASystem
internal import CCurl
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One download's I/O state. Owned by the engine thread: only it and the libcurl callbacks it
/// drives (on the same thread) touch it.
final class Transfer: @unchecked Sendable {
    /// The request as added; only its restrictions change later (``DownloadEngine/liftRestrictions(_:)``).
    var request: DownloadRequest
    var machine: TransferStateMachine
    let sequence: Int

    var easy: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    var fd: Int32 = -1
    /// Whether the partial file was opened at least once (``bytesOnDisk`` is known).
    var partialFileOpened = false
    /// Bytes of the partial file known to be good (everything written so far).
    var bytesOnDisk: Int64 = 0
    var validator: String?
    /// Whether `validator` is in the sidecar file on disk.
    var validatorPersisted = false
    /// Bumped whenever the transfer leaves the background queue (stale heap entries are skipped).
    var queueGeneration = 0
    /// Bytes after which the validator is written next to the partial file right away; a smaller
    /// partial file is cheap to fetch again after a crash, and skipping the write keeps small
    /// files fast. Interrupted transfers always write it.
    static let persistValidatorAfterBytes: Int64 = 1 << 20
    /// The SHA-256 of the bytes written, made on first use: most downloads declare no SHA-256,
    /// and an OpenSSL context per queued download adds up over 100,000 of them.
    var hasher: SHA256Hasher {
        get {
            if let hasherStorage { return hasherStorage }
            let made = SHA256Hasher()
            hasherStorage = made
            return made
        }
        set { hasherStorage = newValue }
    }
    private var hasherStorage: SHA256Hasher?
    /// Whether `hasher` covers exactly `bytesOnDisk` bytes.
    var hasherInSync = true

    // The current request.
    var requestOffset: Int64 = 0
    var requestValidator: String?
    var head = ResponseHead()
    var decision: ResponseDecision?
    /// Why a callback aborted the transfer.
    var abortError: DownloadError?
    var discardedBodyBytes = 0
    var total: Int64?

    /// Content-addressed (``DownloadRequest/sink``): the resource offset of the current
    /// response's next body byte; bytes before ``bytesOnDisk`` (kept already) are dropped.
    var position: Int64 = 0

    /// Body bytes received from the network, over all attempts.
    var receivedBytes: Int64 = 0
    /// ``receivedBytes`` when the current request started.
    var receivedBeforeRequest: Int64 = 0

    /// How far the current request got, in words for a retry's reason: `""` when it received
    /// nothing and the partial file is empty, else ` after 1200 bytes of this request (partial
    /// file: 65306361 bytes)`. The partial file's size alone read as this attempt's count.
    var requestBytesText: String {
        let received = receivedBytes - receivedBeforeRequest
        if received == 0 && bytesOnDisk == 0 { return "" }
        return " after \(received) bytes of this request (partial file: \(bytesOnDisk) bytes)"
    }
    /// When progress was last reported (real time: progress is for people, not for logic).
    var lastProgress: ContinuousClock.Instant?
    /// `bytesOnDisk` when progress was last reported.
    var reportedBytes: Int64 = -1
    /// Engine-clock time of the last byte (or header) received: for stall detection.
    var lastActivity: Duration = .zero
    /// The engine loop, to report progress from the write path.
    weak var loop: EngineLoop?
    var credential: DownloadRequest.Credential?

    /// fsync the file before renaming it into place (see ``DownloadEngine/Configuration/durable``).
    var durable = true

    init(request: DownloadRequest, sequence: Int) {
        self.request = request
        self.sequence = sequence
        self.machine = TransferStateMachine(
            url: request.url, isForeground: request.isForeground, allowList: request.allowList,
            allowedHosts: request.trust.allowedHosts, contentAddressed: request.sink != nil)
        self.credential = request.credential
    }

    var id: String { request.id }
    /// The server of its current URL (``ServerGate/key(of:)``), kept while the URL stays.
    var serverKey: String? {
        if let cached = serverKeyCache, cached.url == machine.currentURL { return cached.key }
        let key = ServerGate.key(of: machine.currentURL)
        serverKeyCache = (machine.currentURL, key)
        return key
    }
    private var serverKeyCache: (url: String, key: String?)?
    /// Foreground and essential transfers start at once, outside the background bound (an essential
    /// download is what the app waits for before it can run; it keeps the background retry policy).
    var startsAtOnce: Bool { machine.isForeground || request.isEssential }
    var validatorPath: String { request.partialPath + ".validator" }

    // MARK: Partial file

    /// Opens the partial file and learns what is on disk (and its validator, if remembered).
    func openPartialFile() throws(DownloadError) {
        if let sink = request.sink {
            // No file: what is kept is the sink's.
            bytesOnDisk = sink.rewind()
            return
        }
        guard fd < 0 else { return }
        fd = open(request.partialPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if fd < 0 && errno == ENOENT {
            // The folder is created on first use only: a stat per file adds up over thousands.
            let directory = (request.partialPath as NSString).deletingLastPathComponent
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            fd = open(request.partialPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        }
        guard fd >= 0 else { throw fileError("open", request.partialPath) }
        partialFileOpened = true
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw fileError("fstat", request.partialPath) }
        bytesOnDisk = Int64(info.st_size)
        if bytesOnDisk > 0, let saved = try? String(contentsOfFile: validatorPath, encoding: .utf8), !saved.isEmpty {
            validator = saved
            validatorPersisted = true
        } else if bytesOnDisk > 0, let remembered = request.validator, !remembered.isEmpty {
            validator = remembered
        }
        if bytesOnDisk > 0 && validator == nil {
            // Bytes of an unknown version: they cannot be resumed safely.
            try truncate(to: 0)
        }
        hasherInSync = bytesOnDisk == 0
    }

    func truncate(to size: Int64) throws(DownloadError) {
        // A sink keeps what it checked; a response that starts earlier is dropped up to it instead.
        if request.sink != nil { return }
        guard ftruncate(fd, off_t(size)) == 0 else { throw fileError("ftruncate", request.partialPath) }
        bytesOnDisk = size
        if size == 0 {
            hasherStorage = nil  // a fresh one on first use
            hasherInSync = true
        } else {
            hasherInSync = false
        }
    }

    /// Rehashes what is on disk when resuming (only needed when a SHA-256 is to be checked).
    func syncHasher() throws(DownloadError) {
        guard !hasherInSync else { return }
        hasher = SHA256Hasher()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        while offset < bytesOnDisk {
            let want = Int(min(Int64(buffer.count), bytesOnDisk - offset))
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(offset)) }
            guard count > 0 else { throw fileError("pread", request.partialPath) }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            offset += Int64(count)
        }
        hasherInSync = true
    }

    func rememberValidator(_ value: String?) {
        validator = value
        if validatorPersisted {
            try? FileManager.default.removeItem(atPath: validatorPath)
            validatorPersisted = false
        }
    }

    /// Writes the validator next to the partial file (so another process can resume it), if
    /// there are bytes worth keeping and it is not there yet.
    func persistValidator() {
        guard !validatorPersisted, bytesOnDisk > 0, let validator, fd >= 0 else { return }
        validatorPersisted = (try? validator.write(toFile: validatorPath, atomically: true, encoding: .utf8)) != nil
    }

    /// Appends body bytes at the end of the partial file.
    func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var written = 0
        while written < bytes.count {
            let count = pwrite(
                fd, bytes.baseAddress! + written, bytes.count - written, off_t(bytesOnDisk + Int64(written)))
            if count < 0 {
                if errno == EINTR { continue }
                abortError = fileError("pwrite", request.partialPath)
                return false
            }
            written += count
        }
        if request.sha256 != nil { hasher.update(bytes) }
        let before = bytesOnDisk
        bytesOnDisk += Int64(bytes.count)
        if !validatorPersisted && bytesOnDisk >= Self.persistValidatorAfterBytes { persistValidator() }
        if durable {
            // Start writeback of each completed 8 MiB so the fsync before the rename has little
            // left to do (the download and the disk work overlap).
            let chunk: Int64 = 8 << 20
            if before / chunk != bytesOnDisk / chunk {
                ba_sys_start_writeback(fd, (bytesOnDisk / chunk - 1) * chunk, chunk)
            }
        }
        return true
    }

    /// Checks size and SHA-256, then fsyncs and renames the partial file into place (a sink's
    /// transfer: checks the size and tells the sink).
    func finish() -> Result<String, DownloadError> {
        if let sink = request.sink {
            guard request.expectedSize == bytesOnDisk else {
                return .failure(
                    DownloadError(
                        .sizeMismatch,
                        "the server sent \(bytesOnDisk) bytes for \(machine.currentURL), expected \(request.expectedSize ?? 0)"
                    ))
            }
            do { try sink.finish() } catch { return .failure(error) }
            return .success("")
        }
        if let expected = request.expectedSize, expected != bytesOnDisk {
            return .failure(
                DownloadError(
                    .sizeMismatch,
                    "the server sent \(bytesOnDisk) bytes for \(machine.currentURL), expected \(expected)"))
        }
        var digest = ""
        if let expected = request.sha256 {
            do {
                try syncHasher()
            } catch {
                return .failure(error)
            }
            digest = hasher.finalizeHex()
            guard digest == expected else {
                // The bytes are wrong as a whole: do not keep them for a resume.
                try? truncate(to: 0)
                rememberValidator(nil)
                return .failure(
                    DownloadError(
                        .checksumMismatch, "SHA-256 of \(machine.currentURL) is \(digest), expected \(expected)"))
            }
        }
        if durable { guard fsync(fd) == 0 else { return .failure(fileError("fsync", request.partialPath)) } }
        close(fd)
        fd = -1
        guard rename(request.partialPath, request.destination) == 0 else {
            return .failure(fileError("rename", request.destination))
        }
        if validatorPersisted { try? FileManager.default.removeItem(atPath: validatorPath) }
        return .success(digest)
    }

    func closeFile() {
        if fd >= 0 {
            close(fd)
            fd = -1
        }
    }

    func fileError(_ call: String, _ path: String) -> DownloadError {
        let code = errno
        return DownloadError(
            code == ENOSPC || code == EDQUOT ? .noSpace : .fileSystem,
            "\(call) \(path): \(String(cString: strerror(code)))")
    }

    // MARK: Response handling (called from libcurl callbacks on the engine thread)

    /// One header line arrived.
    func headerLine(_ line: UnsafeRawBufferPointer) {
        if let loop { lastActivity = loop.clock.now() }
        guard head.consume(bytes: line) else { return }
        let decision =
            if request.sink != nil, let expectedSize = request.expectedSize {
                ResponseDecision.decideContentAddressed(
                    head, requestedOffset: requestOffset, expectedSize: expectedSize, url: machine.currentURL)
            } else {
                ResponseDecision.decide(
                    head, requestedOffset: requestOffset, sentValidator: requestValidator,
                    expectedSize: request.expectedSize, url: machine.currentURL)
            }
        self.decision = decision
        loop?.noteAnswer(self)
        if case .write(let offset, let total, _) = decision, let sink = request.sink {
            self.total = total
            position = offset
            if offset < bytesOnDisk {
                let again = bytesOnDisk - offset
                let asked = "Range: bytes=\(requestOffset)-"
                let why =
                    if requestOffset == 0 {
                        "a request without a range"
                    } else if head.status == 200 {
                        "a 200 to \(asked)"
                    } else {
                        "a 206 from \(offset) to \(asked)"
                    }
                sink.note(
                    "\(machine.currentURL): \(why): the first \(again) bytes, kept already, are fetched again and dropped"
                )
            }
        } else if case .write(let offset, let total, let validator) = decision {
            self.total = total
            if let limit = request.byteLimit, let total, total > limit {
                abortError = DownloadError(
                    .allowanceDisallowed,
                    "the server declared \(total) bytes for \(machine.currentURL), more than the \(limit) allowed")
                return
            }
            if offset == 0 && bytesOnDisk != 0 {
                do {
                    try truncate(to: 0)
                } catch {
                    abortError = error
                }
            }
            if validator != self.validator {
                rememberValidator(validator)
                // The owner (basd) keeps it with the download's state, to resume after a restart.
                if let validator { loop?.emit(.validator(id: id, value: validator)) }
            }
        }
    }

    /// Body bytes arrived; false aborts the request.
    func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard abortError == nil else { return false }
        guard case .write = decision else {
            // Bodies of redirects, errors and 401s are small: read them so the connection can be
            // reused, but not a large one (a 200 of the wrong size, say).
            discardedBodyBytes += bytes.count
            if case .fail = decision { return false }
            if case .restartWithoutRange = decision { return false }
            return discardedBodyBytes <= 64 * 1024
        }
        if let sink = request.sink { return take(bytes, into: sink) }
        if let expected = request.expectedSize, bytesOnDisk + Int64(bytes.count) > expected {
            abortError = DownloadError(
                .sizeMismatch, "the server sent more than the expected \(expected) bytes for \(machine.currentURL)")
            return false
        }
        if let limit = request.byteLimit, bytesOnDisk + Int64(bytes.count) > limit {
            abortError = DownloadError(
                .allowanceExceeded, "the server sent more than the \(limit) bytes allowed for \(machine.currentURL)")
            return false
        }
        receivedBytes += Int64(bytes.count)
        if let loop { lastActivity = loop.clock.now() }
        return append(bytes)
    }

    /// A content-addressed body's bytes: those before ``bytesOnDisk`` (kept already) dropped, the
    /// rest handed to `sink`; false aborts the request.
    private func take(_ bytes: UnsafeRawBufferPointer, into sink: any DownloadSink) -> Bool {
        receivedBytes += Int64(bytes.count)
        if let loop { lastActivity = loop.clock.now() }
        let skip = Int(min(Int64(bytes.count), max(0, bytesOnDisk - position)))
        position += Int64(skip)
        let rest = UnsafeRawBufferPointer(rebasing: bytes[skip...])
        guard !rest.isEmpty else { return true }
        if let expected = request.expectedSize, position + Int64(rest.count) > expected {
            abortError = DownloadError(
                .sizeMismatch, "the server sent more than the expected \(expected) bytes for \(machine.currentURL)")
            return false
        }
        do {
            try sink.take(rest)
        } catch {
            abortError = error
            return false
        }
        position += Int64(rest.count)
        bytesOnDisk = position
        return true
    }
}
