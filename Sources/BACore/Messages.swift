/// The runner protocol: length-prefixed frames over a socketpair between the host (supervisor)
/// and `ba-extension-runner`.
///
/// A frame is a little-endian `u32` length, then that many bytes: one type byte and the payload.
/// The runner speaks first with ``RunnerMessage/hello(protocolVersion:)``; the host answers with
/// ``HostMessage/request(_:)``; the runner then streams messages until
/// ``RunnerMessage/finished(_:)`` or ``RunnerMessage/failure(_:)``. A request with
/// ``RunRequest/moreEvents`` is several calls in one process: each call ends with its own
/// `finished`, and the next call starts right after it; a `failure` ends the process.
package enum RunnerProtocol {
    /// Bumped on any incompatible change to a message.
    package static let version: UInt32 = 4
    /// Largest frame either side accepts.
    package static let maximumFrameLength = 4 << 20
    /// The environment variable in which the runner names the call's app group container to the
    /// extension (set before the library is loaded; absent when the call has no container).
    /// Not part of the C ABI: see docs/c-abi.md.
    package static let appGroupContainerVariable = "BA_APP_GROUP_CONTAINER"
}

/// What went wrong before the entry point could be called.
package enum RunnerFailureKind: UInt8, Sendable, Equatable {
    /// dlopen refused the file.
    case notALibrary = 1
    /// No `ba_extension_descriptor`, it returned NULL, or the requested entry point is NULL.
    case missingEntryPoint = 2
    /// The descriptor's ABI version is not one this host speaks.
    case abiMismatch = 3
    /// The request could not be carried out (bad arguments, memory cap could not be set).
    case invalidRequest = 4
}

/// A failure reported by the runner instead of calling the extension.
package struct RunnerFailure: Sendable, Equatable {
    package var kind: RunnerFailureKind
    package var message: String
    /// For ``RunnerFailureKind/abiMismatch``: what the library declared.
    package var foundMajor: UInt16 = 0
    package var foundMinor: UInt16 = 0
    package init(kind: RunnerFailureKind, message: String, foundMajor: UInt16 = 0, foundMinor: UInt16 = 0) {
        self.kind = kind
        self.message = message
        self.foundMajor = foundMajor
        self.foundMinor = foundMinor
    }
}

/// Who the loaded extension says it is.
public struct ExtensionIdentity: Sendable, Equatable {
    public var name: String
    public var version: String
    public var abiMajor: UInt16
    public var abiMinor: UInt16
    /// Bit i set: entry point i is implemented (see ``EntryPoint``).
    public var entryPoints: UInt32
    public init(name: String, version: String, abiMajor: UInt16, abiMinor: UInt16, entryPoints: UInt32) {
        self.name = name
        self.version = version
        self.abiMajor = abiMajor
        self.abiMinor = abiMinor
        self.entryPoints = entryPoints
    }
}

/// The descriptor's entry points, in descriptor order.
package enum EntryPoint: Int, Sendable, CaseIterable {
    case downloadsForRequest = 0
    case downloadFinished = 1
    case downloadFailed = 2
    case downloadReceivedChallenge = 3
    case extensionWillTerminate = 4
    /// ABI 1.1: optional; absent means "download every pack".
    case shouldDownload = 5

    /// The C field name, for messages.
    package var cName: String {
        switch self {
        case .downloadsForRequest: "downloads_for_request"
        case .downloadFinished: "download_finished"
        case .downloadFailed: "download_failed"
        case .downloadReceivedChallenge: "download_received_challenge"
        case .extensionWillTerminate: "extension_will_terminate"
        case .shouldDownload: "should_download"
        }
    }
}

/// The end of a successful call.
package struct RunnerSummary: Sendable, Equatable {
    /// How many times the extension called add_download (including refused ones).
    package var returnedCount: UInt64
    /// Peak resident memory of the runner (VmHWM), bytes; -1 if unknown.
    package var peakMemoryBytes: Int64
    /// For the challenge entry point: the disposition the extension returned.
    package var challengeDisposition: Int32
    package init(returnedCount: UInt64, peakMemoryBytes: Int64, challengeDisposition: Int32 = -1) {
        self.returnedCount = returnedCount
        self.peakMemoryBytes = peakMemoryBytes
        self.challengeDisposition = challengeDisposition
    }
}

/// An error handed to `download_failed`.
public struct ErrorRecord: Sendable, Equatable {
    public var domain: String
    public var code: Int32
    public var message: String
    public init(domain: String, code: Int32, message: String) {
        self.domain = domain
        self.code = code
        self.message = message
    }
}

/// An authentication challenge handed to `download_received_challenge`.
public struct ChallengeRecord: Sendable, Equatable {
    public var host: String
    public var port: Int32
    public var protocolName: String
    public var realm: String
    public var authenticationMethod: String
    public var previousFailureCount: Int32
    public init(
        host: String, port: Int32, protocolName: String, realm: String, authenticationMethod: String,
        previousFailureCount: Int32
    ) {
        self.host = host
        self.port = port
        self.protocolName = protocolName
        self.realm = realm
        self.authenticationMethod = authenticationMethod
        self.previousFailureCount = previousFailureCount
    }
}

/// An asset pack handed to `should_download` (`ManagedDownloaderExtension.shouldDownload(_:)`):
/// the download manifest's entry for the version that would be downloaded.
public struct AssetPackRecord: Sendable, Equatable {
    /// The pack's `assetPackID`.
    public var id: String
    public var version: Int64
    /// Bytes a first download fetches.
    public var downloadSize: Int64
    /// The manifest's `userInfo`, as JSON bytes; nil when it has none.
    public var userInfo: [UInt8]?
    public init(id: String, version: Int64, downloadSize: Int64, userInfo: [UInt8]? = nil) {
        self.id = id
        self.version = version
        self.downloadSize = downloadSize
        self.userInfo = userInfo
    }

    /// Most packs one `shouldDownload` call is asked about.
    public static let maximumPerCall = 10_000
    /// Largest `userInfo` carried (a larger one is a malformed manifest entry).
    public static let maximumUserInfoBytes = 64 * 1024
}

/// Which entry point to call, with its arguments.
public enum RunnerEvent: Sendable, Equatable {
    /// `downloads(for:manifestURL:extensionInfo:)`; sizes are -1 for nil.
    case contentRequest(
        request: Int32, manifestPath: String, manifestURL: String, restrictedRemaining: Int64,
        restrictedEssentialRemaining: Int64)
    case finished(DownloadDescription, filePath: String)
    case failed(DownloadDescription, ErrorRecord)
    case challenge(DownloadDescription, ChallengeRecord)
    case willTerminate
    /// `shouldDownload(_:)`, once per pack, in order, in one call: the runner answers with
    /// ``RunnerMessage/packDecisions(_:)`` (all yes when the extension has no `should_download`).
    case shouldDownload([AssetPackRecord])

    package var entryPoint: EntryPoint {
        switch self {
        case .contentRequest: .downloadsForRequest
        case .finished: .downloadFinished
        case .failed: .downloadFailed
        case .challenge: .downloadReceivedChallenge
        case .willTerminate: .extensionWillTerminate
        case .shouldDownload: .shouldDownload
        }
    }
}

// The wire form of an event: a kind byte, then its arguments.
extension RunnerEvent {
    func encode(into w: inout ByteWriter) {
        switch self {
        case .contentRequest(let kind, let path, let url, let remaining, let essentialRemaining):
            w.u8(0)
            w.i32(kind)
            w.string(path)
            w.string(url)
            w.i64(remaining)
            w.i64(essentialRemaining)
        case .finished(let download, let path):
            w.u8(1)
            download.encode(into: &w)
            w.string(path)
        case .failed(let download, let error):
            w.u8(2)
            download.encode(into: &w)
            w.string(error.domain)
            w.i32(error.code)
            w.string(error.message)
        case .challenge(let download, let challenge):
            w.u8(3)
            download.encode(into: &w)
            w.string(challenge.host)
            w.i32(challenge.port)
            w.string(challenge.protocolName)
            w.string(challenge.realm)
            w.string(challenge.authenticationMethod)
            w.i32(challenge.previousFailureCount)
        case .willTerminate:
            w.u8(4)
        case .shouldDownload(let packs):
            w.u8(5)
            w.u32(UInt32(truncatingIfNeeded: packs.count))
            for pack in packs {
                w.string(pack.id)
                w.i64(pack.version)
                w.i64(pack.downloadSize)
                w.bool(pack.userInfo != nil)
                if let userInfo = pack.userInfo { w.blob(userInfo) }
            }
        }
    }

    static func decode(from r: inout ByteReader) throws(WireError) -> RunnerEvent {
        switch try r.u8() {
        case 0:
            return .contentRequest(
                request: try r.i32(), manifestPath: try r.string(), manifestURL: try r.string(),
                restrictedRemaining: try r.i64(), restrictedEssentialRemaining: try r.i64())
        case 1:
            return .finished(try DownloadDescription.decode(from: &r), filePath: try r.string())
        case 2:
            let download = try DownloadDescription.decode(from: &r)
            return .failed(download, ErrorRecord(domain: try r.string(), code: try r.i32(), message: try r.string()))
        case 3:
            let download = try DownloadDescription.decode(from: &r)
            return .challenge(
                download,
                ChallengeRecord(
                    host: try r.string(), port: try r.i32(), protocolName: try r.string(), realm: try r.string(),
                    authenticationMethod: try r.string(), previousFailureCount: try r.i32()))
        case 4:
            return .willTerminate
        case 5:
            let count = Int(try r.u32())
            guard count <= AssetPackRecord.maximumPerCall else {
                throw WireError("\(count) asset packs exceed the limit of \(AssetPackRecord.maximumPerCall)")
            }
            var packs: [AssetPackRecord] = []
            packs.reserveCapacity(count)
            for _ in 0..<count {
                let id = try r.string()
                let version = try r.i64()
                let size = try r.i64()
                let userInfo = try r.bool() ? try r.blob() : nil
                packs.append(AssetPackRecord(id: id, version: version, downloadSize: size, userInfo: userInfo))
            }
            return .shouldDownload(packs)
        case let other:
            throw WireError("unknown event kind \(other)")
        }
    }
}

/// Everything the runner needs for one call.
package struct RunRequest: Sendable, Equatable {
    package var libraryPath: String
    package var event: RunnerEvent
    /// RLIMIT_DATA set before dlopen, bytes; 0 = no cap.
    package var memoryLimitBytes: UInt64
    /// add_download refuses past this many.
    package var maximumDownloads: UInt32
    /// The app group's exclusive-control lock file; empty = none.
    package var lockPath: String
    /// What current_downloads reports.
    package var currentDownloads: [DownloadDescription]
    /// Events to call after `event`, in order, in the same process (at most
    /// ``maximumMoreEvents``); empty for one call.
    package var moreEvents: [RunnerEvent]

    /// Most events one request may carry after its first.
    package static let maximumMoreEvents = 10_000

    package init(
        libraryPath: String, event: RunnerEvent, memoryLimitBytes: UInt64, maximumDownloads: UInt32,
        lockPath: String = "", currentDownloads: [DownloadDescription] = [], moreEvents: [RunnerEvent] = []
    ) {
        self.libraryPath = libraryPath
        self.event = event
        self.memoryLimitBytes = memoryLimitBytes
        self.maximumDownloads = maximumDownloads
        self.lockPath = lockPath
        self.currentDownloads = currentDownloads
        self.moreEvents = moreEvents
    }

    /// Every event of the request, in call order.
    package var events: [RunnerEvent] { [event] + moreEvents }
}

/// Host -> runner.
package enum HostMessage: Sendable, Equatable {
    case request(RunRequest)
    /// The deadline is near: call `extension_will_terminate` now (the kill follows anyway).
    case terminate

    package func frame() -> [UInt8] {
        var w = ByteWriter()
        switch self {
        case .terminate:
            w.u8(2)
        case .request(let request):
            w.u8(1)
            w.string(request.libraryPath)
            w.u64(request.memoryLimitBytes)
            w.u32(request.maximumDownloads)
            w.string(request.lockPath)
            w.u32(UInt32(truncatingIfNeeded: request.currentDownloads.count))
            for download in request.currentDownloads { download.encode(into: &w) }
            request.event.encode(into: &w)
            w.u32(UInt32(truncatingIfNeeded: request.moreEvents.count))
            for event in request.moreEvents { event.encode(into: &w) }
        }
        return Frame.wrap(w.bytes)
    }

    package static func decode(_ payload: [UInt8]) throws(WireError) -> HostMessage {
        var r = ByteReader(payload)
        let type = try r.u8()
        if type == 2 {
            guard r.isAtEnd else { throw WireError("trailing bytes after terminate") }
            return .terminate
        }
        guard type == 1 else { throw WireError("unknown host message type \(type)") }
        let library = try r.string()
        let memory = try r.u64()
        let maximum = try r.u32()
        let lockPath = try r.string()
        let count = Int(try r.u32())
        guard count <= 100_000 else { throw WireError("\(count) current downloads exceed the limit of 100000") }
        var current: [DownloadDescription] = []
        for _ in 0..<count { current.append(try DownloadDescription.decode(from: &r)) }
        let event = try RunnerEvent.decode(from: &r)
        let more = Int(try r.u32())
        guard more <= RunRequest.maximumMoreEvents else {
            throw WireError("\(more) more events exceed the limit of \(RunRequest.maximumMoreEvents)")
        }
        var moreEvents: [RunnerEvent] = []
        moreEvents.reserveCapacity(more)
        for _ in 0..<more { moreEvents.append(try RunnerEvent.decode(from: &r)) }
        guard r.isAtEnd else { throw WireError("trailing bytes after request") }
        return .request(
            RunRequest(
                libraryPath: library, event: event, memoryLimitBytes: memory, maximumDownloads: maximum,
                lockPath: lockPath, currentDownloads: current, moreEvents: moreEvents))
    }
}

/// Runner -> host.
package enum RunnerMessage: Sendable, Equatable {
    case hello(protocolVersion: UInt32)
    case identity(ExtensionIdentity)
    /// Returned from downloads_for_request with add_download.
    case download(DownloadDescription)
    /// Passed to schedule_download outside downloads_for_request.
    case scheduled(DownloadDescription)
    case cancelled(identifier: String)
    case log(level: Int32, message: String)
    case credential(user: String, password: String)
    case failure(RunnerFailure)
    case finished(RunnerSummary)
    /// The answers of a `shouldDownload` call, one per pack in order (true: download it); sent
    /// just before its `finished`.
    case packDecisions([Bool])

    package func frame() -> [UInt8] {
        var w = ByteWriter()
        encode(into: &w)
        return Frame.wrap(w.bytes)
    }

    /// The type byte of ``download(_:)``, for writers that encode the record themselves.
    package static let downloadType: UInt8 = 3

    package func encode(into w: inout ByteWriter) {
        switch self {
        case .hello(let version):
            w.u8(1)
            w.u32(version)
        case .identity(let identity):
            w.u8(2)
            w.string(identity.name)
            w.string(identity.version)
            w.u32(UInt32(identity.abiMajor))
            w.u32(UInt32(identity.abiMinor))
            w.u32(identity.entryPoints)
        case .download(let download):
            w.u8(3)
            download.encode(into: &w)
        case .scheduled(let download):
            w.u8(4)
            download.encode(into: &w)
        case .cancelled(let identifier):
            w.u8(5)
            w.string(identifier)
        case .log(let level, let message):
            w.u8(6)
            w.i32(level)
            w.string(message)
        case .credential(let user, let password):
            w.u8(7)
            w.string(user)
            w.string(password)
        case .failure(let failure):
            w.u8(8)
            w.u8(failure.kind.rawValue)
            w.string(failure.message)
            w.u32(UInt32(failure.foundMajor))
            w.u32(UInt32(failure.foundMinor))
        case .finished(let summary):
            w.u8(9)
            w.u64(summary.returnedCount)
            w.i64(summary.peakMemoryBytes)
            w.i32(summary.challengeDisposition)
        case .packDecisions(let answers):
            w.u8(10)
            w.u32(UInt32(truncatingIfNeeded: answers.count))
            for answer in answers { w.bool(answer) }
        }
    }

    package static func decode(_ payload: [UInt8]) throws(WireError) -> RunnerMessage {
        var r = ByteReader(payload)
        let message: RunnerMessage
        switch try r.u8() {
        case 1: message = .hello(protocolVersion: try r.u32())
        case 2:
            let name = try r.string()
            let version = try r.string()
            let major = try r.u32()
            let minor = try r.u32()
            guard major <= UInt16.max, minor <= UInt16.max else { throw WireError("ABI version out of range") }
            message = .identity(
                ExtensionIdentity(
                    name: name, version: version, abiMajor: UInt16(major), abiMinor: UInt16(minor),
                    entryPoints: try r.u32()))
        case 3: message = .download(try DownloadDescription.decode(from: &r))
        case 4: message = .scheduled(try DownloadDescription.decode(from: &r))
        case 5: message = .cancelled(identifier: try r.string())
        case 6:
            let level = try r.i32()
            var valid = true
            message = .log(level: level, message: try r.string(valid: &valid))
        case 7: message = .credential(user: try r.string(), password: try r.string())
        case 8:
            let rawKind = try r.u8()
            guard let kind = RunnerFailureKind(rawValue: rawKind) else {
                throw WireError("unknown failure kind \(rawKind)")
            }
            var valid = true
            let text = try r.string(valid: &valid)
            let major = try r.u32()
            let minor = try r.u32()
            message = .failure(
                RunnerFailure(
                    kind: kind, message: text, foundMajor: UInt16(truncatingIfNeeded: major),
                    foundMinor: UInt16(truncatingIfNeeded: minor)))
        case 9:
            message = .finished(
                RunnerSummary(
                    returnedCount: try r.u64(), peakMemoryBytes: try r.i64(), challengeDisposition: try r.i32()))
        case 10:
            let count = Int(try r.u32())
            guard count <= AssetPackRecord.maximumPerCall else {
                throw WireError("\(count) pack decisions exceed the limit of \(AssetPackRecord.maximumPerCall)")
            }
            var answers: [Bool] = []
            answers.reserveCapacity(count)
            for _ in 0..<count { answers.append(try r.bool()) }
            message = .packDecisions(answers)
        case let other:
            throw WireError("unknown runner message type \(other)")
        }
        guard r.isAtEnd else { throw WireError("trailing bytes after runner message") }
        return message
    }
}

/// Length-prefix framing.
package enum Frame {
    /// Appends one frame to `writer`: a length placeholder, the payload `body` writes, then the
    /// length filled in, with no intermediate buffer. When `body` returns false the whole frame
    /// is dropped.
    @discardableResult
    package static func append(to writer: inout ByteWriter, _ body: (inout ByteWriter) -> Bool) -> Bool {
        let start = writer.count
        writer.u32(0)
        guard body(&writer) else {
            writer.truncate(to: start)
            return false
        }
        writer.patchU32(UInt32(truncatingIfNeeded: writer.count - start - 4), at: start)
        return true
    }

    /// Prefixes `payload` with its length.
    package static func wrap(_ payload: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.u32(UInt32(truncatingIfNeeded: payload.count))
        return w.bytes + payload
    }
}

/// Splits a byte stream into frame payloads, refusing empty or oversized frames.
package struct FrameDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0
    package let maximumFrameLength: Int

    package init(maximumFrameLength: Int = RunnerProtocol.maximumFrameLength) {
        self.maximumFrameLength = maximumFrameLength
    }

    /// Bytes received but not yet part of a whole frame.
    package var pendingByteCount: Int { buffer.count - start }

    package mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame's payload, or nil if more bytes are needed.
    package mutating func next() throws(WireError) -> [UInt8]? {
        guard buffer.count - start >= 4 else { return nil }
        let length =
            Int(buffer[start]) | Int(buffer[start + 1]) << 8 | Int(buffer[start + 2]) << 16 | Int(buffer[start + 3])
            << 24
        guard length > 0 else { throw WireError("empty frame") }
        guard length <= maximumFrameLength else {
            throw WireError("frame of \(length) bytes exceeds the \(maximumFrameLength)-byte limit")
        }
        guard buffer.count - start - 4 >= length else { return nil }
        let payload = Array(buffer[(start + 4)..<(start + 4 + length)])
        start += 4 + length
        return payload
    }
}
