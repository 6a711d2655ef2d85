internal import CCurl
import Foundation

// The libcurl side of the engine thread: easy handles, their options and callbacks, and the
// multi handle's loop.
extension EngineLoop {

    func launch(_ transfer: Transfer, url: String, offset: Int64, validator: String?) {
        detach(transfer)
        if offset == 0 && transfer.bytesOnDisk > 0 {
            do {
                try transfer.truncate(to: 0)
            } catch {
                return finishFailed(transfer, error)
            }
        }
        transfer.requestOffset = offset
        transfer.receivedBeforeRequest = transfer.receivedBytes
        transfer.requestValidator = validator
        transfer.head = ResponseHead()
        transfer.decision = nil
        transfer.abortError = nil
        transfer.discardedBodyBytes = 0
        transfer.lastActivity = clock.now()
        // The first progress comes 100 ms in: a small file is done before that and needs none.
        transfer.lastProgress = ContinuousClock.now
        guard let easy = curl_easy_init() else {
            return finishFailed(transfer, DownloadError(.network, "curl_easy_init failed"))
        }
        transfer.easy = easy
        active[ObjectIdentifier(transfer)] = transfer
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        ccurl_setopt_string(easy, CURLOPT_URL, url)
        ccurl_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        ccurl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0)  // every hop is checked here
        ccurl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        ccurl_setopt_long(easy, CURLOPT_NOPROGRESS, 1)
        ccurl_setopt_long(easy, CURLOPT_BUFFERSIZE, configuration.bufferSize)
        ccurl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(milliseconds(configuration.connectTimeout)))
        ccurl_setopt_pointer(easy, CURLOPT_PRIVATE, context)
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        errorBuffers[ObjectIdentifier(transfer)] = errorBuffer
        ccurl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        ccurl_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, writeCallback)
        ccurl_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
        ccurl_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, headerCallback)
        ccurl_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
        if offset > 0 { ccurl_setopt_string(easy, CURLOPT_RANGE, "\(offset)-") }
        var headers = transfer.request.headers.map { "\($0.name): \($0.value)" }
        if offset > 0, let validator = validator.flatMap(ResumeValidator.init(stored:)) {
            headers.append("If-Range: \(validator.ifRange)")
        }
        // Identity bytes: a range of a compressed representation is not a range of the file.
        headers.append("Accept-Encoding: identity")
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers { list = curl_slist_append(list, header) }
        transfer.headerList = list
        ccurl_setopt_slist(easy, CURLOPT_HTTPHEADER, list)
        if let credential = transfer.credential, transfer.machine.credentialsSent {
            ccurl_setopt_string(easy, CURLOPT_USERNAME, credential.user)
            ccurl_setopt_string(easy, CURLOPT_PASSWORD, credential.password)
            ccurl_setopt_long(easy, CURLOPT_HTTPAUTH, ccurl_auth_basic_digest())
        }
        if let caFile = transfer.request.trust.caFile { ccurl_setopt_string(easy, CURLOPT_CAINFO, caFile) }
        if let pin = transfer.request.trust.pinnedPublicKey { ccurl_setopt_string(easy, CURLOPT_PINNEDPUBLICKEY, pin) }
        if let directory = transfer.request.trust.caDirectory { ccurl_setopt_string(easy, CURLOPT_CAPATH, directory) }
        if let userAgent = configuration.userAgent { ccurl_setopt_string(easy, CURLOPT_USERAGENT, userAgent) }
        if configuration.verbose { ccurl_setopt_long(easy, CURLOPT_VERBOSE, 1) }
        curl_multi_add_handle(multi, easy)
        emit(.began(id: transfer.id, offset: offset, isForeground: transfer.machine.isForeground))
    }

    /// Takes the transfer's handle off the multi handle and frees it. A sink's transfer keeps only
    /// what its sink kept (a unit the request's end cut short is dropped).
    func detach(_ transfer: Transfer) {
        active[ObjectIdentifier(transfer)] = nil
        if let sink = transfer.request.sink { transfer.bytesOnDisk = sink.rewind() }
        if let easy = transfer.easy {
            curl_multi_remove_handle(multi, easy)
            curl_easy_cleanup(easy)
            transfer.easy = nil
        }
        if let buffer = errorBuffers.removeValue(forKey: ObjectIdentifier(transfer)) { buffer.deallocate() }
        if let list = transfer.headerList {
            curl_slist_free_all(list)
            transfer.headerList = nil
        }
    }

    func drainMessages() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let result = ccurl_message_result(message)
            var privatePointer: UnsafeMutablePointer<CChar>?
            ccurl_getinfo_string(easy, CURLINFO_PRIVATE, &privatePointer)
            guard let privatePointer else { continue }
            let transfer = Unmanaged<Transfer>.fromOpaque(UnsafeRawPointer(privatePointer)).takeUnretainedValue()
            requestEnded(transfer, result: result)
        }
    }

    func requestEnded(_ transfer: Transfer, result: CURLcode) {
        let outcome = outcome(of: transfer, result: result)
        let answered = transfer.decision != nil
        detach(transfer)
        // A transfer that ends here reports its bytes with `finished`; one that will go on
        // reports where it stopped.
        if outcome != .complete { emitProgress(transfer, force: true) }
        let policy = transfer.machine.isForeground ? configuration.foregroundRetry : configuration.backgroundRetry
        let action = transfer.machine.requestEnded(
            outcome, policy: policy, now: clock.now(), random: Double.random(in: 0..<1, using: &random),
            bytesOnDisk: transfer.bytesOnDisk, validator: transfer.validator)
        ended(transfer, action, answered: answered)
    }

    /// Turns libcurl's result and the response decision into the state machine's outcome.
    func outcome(of transfer: Transfer, result: CURLcode) -> TransferStateMachine.Outcome {
        let url = transfer.machine.currentURL
        if let error = transfer.abortError { return .fatal(error) }
        if let decision = transfer.decision {
            switch decision {
            case .fail(let error) where error.httpStatus == 407:
                // Only a proxy sends 407: the response of a plain-http request through it, or of
                // a CONNECT (libcurl hands that head to the header callback too). Not the origin's.
                return .fatal(proxyAsksForCredentials(url: url))
            case .fail(let error): return .fatal(error)
            case .restartWithoutRange(let reason):
                transfer.rememberValidator(nil)
                return .restartWithoutRange(reason: reason)
            case .redirect(let location):
                let resolved = URL(string: location, relativeTo: URL(string: url))?.absoluteURL.absoluteString
                return .redirect(location: location, resolved: resolved)
            case .needsCredentials(let challenge): return .needsCredentials(challenge: challenge)
            case .retry(let reason, let retryAfter):
                let delay = retryAfter.flatMap {
                    RetryPolicy.parseRetryAfter($0, nowUnixSeconds: Int64(Date().timeIntervalSince1970))
                }
                return .retryable(reason: reason, retryAfter: delay, isConnectivity: false)
            case .alreadyComplete:
                if result == CURLE_OK { return .complete }
            case .write:
                if result == CURLE_OK {
                    if let total = transfer.total, transfer.bytesOnDisk != total {
                        return .retryable(
                            reason:
                                "the server ended the response at \(transfer.bytesOnDisk) of \(total) bytes for \(url)",
                            retryAfter: nil, isConnectivity: false)
                    }
                    return .complete
                }
            }
        }
        let code = CurlCode(rawValue: result.rawValue)
        if result == CURLE_FILESIZE_EXCEEDED {
            return .fatal(
                DownloadError(
                    .sizeMismatch, "the server sent more than the expected size for \(url)",
                    curlCode: Int32(result.rawValue)))
        }
        if let outcome = proxyOutcome(of: transfer, result: result, url: url) { return outcome }
        if code.isTLS { return .fatal(tlsError(of: transfer, result: result, url: url)) }
        if code.isTransient || result == CURLE_OK {
            let what = result == CURLE_OK ? "the server closed the connection" : "\(code)"
            return .retryable(
                reason: "\(url): \(what)\(transfer.requestBytesText)", retryAfter: nil,
                isConnectivity: code.isConnectivity)
        }
        return .fatal(DownloadError(.network, "\(url): \(code)", curlCode: Int32(result.rawValue)))
    }

    /// Least time between two progress events of one transfer.
    static let progressInterval = Duration.milliseconds(100)

    /// Reports bytes that arrived since the last report once the interval has passed, also
    /// when no more bytes come (a stalled transfer still shows how far it got).
    func flushProgress() {
        let now = ContinuousClock.now
        for transfer in active.values where transfer.bytesOnDisk != transfer.reportedBytes && transfer.bytesOnDisk > 0 {
            if let last = transfer.lastProgress, now - last < Self.progressInterval { continue }
            emitProgress(transfer, force: true)
        }
    }

    func emitProgress(_ transfer: Transfer, force: Bool) {
        let now = ContinuousClock.now
        if !force, let last = transfer.lastProgress, now - last < Self.progressInterval { return }
        transfer.lastProgress = now
        transfer.reportedBytes = transfer.bytesOnDisk
        emit(
            .progress(
                id: transfer.id, bytesWritten: transfer.bytesOnDisk,
                totalBytes: transfer.request.expectedSize ?? transfer.total))
    }
}

private let writeCallback: ccurl_data_callback = { data, size, count, userData in
    guard let data, let userData else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(userData).takeUnretainedValue()
    let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
    guard transfer.body(bytes) else { return 0 }
    transfer.loop?.emitProgress(transfer, force: false)
    return size * count
}

private let headerCallback: ccurl_data_callback = { data, size, count, userData in
    guard let data, let userData else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(userData).takeUnretainedValue()
    let line = UnsafeRawBufferPointer(start: data, count: size * count)
    transfer.headerLine(line)
    // Identity bytes were asked for (Accept-Encoding: identity); a server that encodes anyway
    // would have the encoded bytes saved as the file, and a range of them does not resume it.
    // Stopped before the first body byte (returning less than given aborts the request).
    if transfer.head.status == 200 || transfer.head.status == 206, let encoding = EngineLoop.contentEncoding(line) {
        transfer.abortError = DownloadError(
            .protocolViolation,
            "\(transfer.machine.currentURL): the server sent the file encoded (Content-Encoding: \(encoding)) "
                + "although the request asked for its bytes as they are (Accept-Encoding: identity); saved, they "
                + "would not be the file, and a range of them would not resume it. Serve the file without a "
                + "Content-Encoding (turn off compression for it on the server)")
        return 0
    }
    return size * count
}

extension EngineLoop {
    /// The encoding a `Content-Encoding` header line names, or nil for any other line and for
    /// `identity` (or an empty value).
    static func contentEncoding(_ line: UnsafeRawBufferPointer) -> String? {
        let name = "content-encoding:".utf8
        guard line.count > name.count else { return nil }
        for (offset, expected) in name.enumerated() {
            var byte = line[offset]
            if byte >= 0x41 && byte <= 0x5A { byte += 32 }
            if byte != expected { return nil }
        }
        let value = String(decoding: UnsafeRawBufferPointer(rebasing: line[name.count...]), as: UTF8.self)
        let codings = value.lowercased().split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        .filter { !$0.isEmpty && $0 != "identity" }
        return codings.isEmpty ? nil : codings.joined(separator: ", ")
    }
}
