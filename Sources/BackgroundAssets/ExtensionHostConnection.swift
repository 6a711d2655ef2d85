internal import BACore
internal import BAExtensionABI
internal import CBAExtension
import Foundation
import Synchronization

/// The host-API table of the entry point running in this process, if any: how
/// ``BADownloadManager`` talks to the system from inside an extension.
///
/// Set by the exported entry points for exactly the duration of one call (one call per process).
struct ExtensionHostConnection: @unchecked Sendable {
    let host: UnsafePointer<ba_host_api>

    private static let current = Mutex<UInt>(0)

    /// The connection of the running entry point, or nil outside one (an app process).
    static var active: ExtensionHostConnection? {
        let address = current.withLock { $0 }
        return UnsafePointer<ba_host_api>(bitPattern: address).map(ExtensionHostConnection.init)
    }

    /// Runs `body` with `host` as the active connection.
    static func with<T>(_ host: UnsafePointer<ba_host_api>?, _ body: () throws -> T) rethrows -> T {
        let address = UInt(bitPattern: host)
        let previous = current.withLock { value in
            defer { value = address }
            return value
        }
        defer { current.withLock { $0 = previous } }
        // Completion handlers the extension started run before the call (and its process) ends.
        return try CompletionHandlers.scoped(body)
    }

    /// Turns BA_FAILED into a ``BAError`` with the host's message.
    private func check(_ status: Int32, code: Int32) throws(BAError) {
        guard status != BA_OK else { return }
        var length = 0
        let message = host.pointee.last_error_message(&length).map {
            String(decoding: UnsafeRawBufferPointer(start: $0, count: length), as: UTF8.self)
        }
        throw BAError(
            BAError.Code(rawValue: Int(code)) ?? .downloadInvalid,
            reason: message ?? "the host refused the call (code \(code))")
    }

    func log(_ level: Int32, _ message: String) {
        var text = message
        text.withUTF8 {
            host.pointee.log(level, UnsafeRawPointer($0.baseAddress)?.assumingMemoryBound(to: CChar.self), $0.count)
        }
    }

    func add(_ record: DownloadDescription) throws(BAError) {
        let arena = CArena()
        var code: Int32 = 0
        try check(host.pointee.add_download(arena.download(record), &code), code: code)
    }

    func schedule(_ record: DownloadDescription) throws(BAError) {
        let arena = CArena()
        var code: Int32 = 0
        try check(host.pointee.schedule_download(arena.download(record), &code), code: code)
    }

    func cancel(_ identifier: String) throws(BAError) {
        let arena = CArena()
        let (pointer, length) = arena.string(identifier)
        var code: Int32 = 0
        try check(host.pointee.cancel_download(pointer, length, &code), code: code)
    }

    func currentDownloads() throws(BAError) -> [DownloadDescription] {
        final class Collector { var records: [DownloadDescription] = [] }
        let collector = Collector()
        var code: Int32 = 0
        let status = host.pointee.current_downloads(
            { user, download in
                guard let user, let record = readHostDownload(download) else { return }
                Unmanaged<Collector>.fromOpaque(user).takeUnretainedValue().records.append(record)
            }, Unmanaged.passUnretained(collector).toOpaque(), &code)
        try check(status, code: code)
        return collector.records
    }

    /// One holder per process: the host's lock is per process, and completion handlers run on
    /// threads of their own, so two of them must not both think they hold it.
    private static let processGate = DispatchSemaphore(value: 1)

    func acquireExclusiveControl(timeoutMilliseconds: Int64) throws(BAError) {
        let start = DispatchTime.now()
        let gateDeadline: DispatchTime =
            timeoutMilliseconds < 0 ? .distantFuture : start + .milliseconds(Int(clamping: timeoutMilliseconds))
        guard Self.processGate.wait(timeout: gateDeadline) == .success else {
            throw BAError(
                .downloadInvalid,
                reason: "exclusive control is held by another handler of this extension call; "
                    + "not acquired within \(timeoutMilliseconds) ms")
        }
        let waited = Int64((DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1_000_000)
        let left = timeoutMilliseconds < 0 ? -1 : max(0, timeoutMilliseconds - waited)
        var code: Int32 = 0
        do {
            try check(host.pointee.acquire_exclusive_control(left, &code), code: code)
        } catch {
            Self.processGate.signal()
            throw error
        }
    }

    func releaseExclusiveControl() {
        var code: Int32 = 0
        _ = host.pointee.release_exclusive_control(&code)
        Self.processGate.signal()
    }

    func useCredential(user: String, password: String) throws(BAError) {
        let arena = CArena()
        let (userPointer, userLength) = arena.string(user)
        let (passwordPointer, passwordLength) = arena.string(password)
        var code: Int32 = 0
        try check(
            host.pointee.use_credential(userPointer, userLength, passwordPointer, passwordLength, &code), code: code)
    }
}

/// Linux addition: the level of a ``BAHostLog(_:level:)`` line.
public enum BAHostLogLevel: Int32, Sendable {
    case debug = 0
    case info = 1
    case notice = 2
    case error = 3
}

/// Linux addition: writes a line to the host's log from inside an extension call (it appears in
/// `ba run-extension` output and in basd's log); outside a call it goes to standard error.
public func BAHostLog(_ message: String, level: BAHostLogLevel = .info) {
    if let connection = ExtensionHostConnection.active {
        connection.log(level.rawValue, message)
    } else {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }
}
