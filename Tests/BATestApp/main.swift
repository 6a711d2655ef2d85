// An app for end-to-end tests: it uses only BackgroundAssets' public API, as an app would.
//
// It sets a delegate, then reads commands from stdin, one per line, and prints one JSON object
// per line to stdout for every delegate callback and every command result:
//
//   schedule ID URL SIZE [essential] [sha256=HEX]   BADownloadManager.scheduleDownload
//   promote ID                                     startForegroundDownload (of the current download ID)
//   cancel ID                                      cancel
//   list | alist                                   fetchCurrentDownloads() | await currentDownloads
//   lock HOLD_MS FILE                              withExclusiveControl { … } (closure form, waits)
//   alock HOLD_MS FILE                             try await withExclusiveControl { … } (async form)
//   trylock                                        withExclusiveControl(beforeDate: Date()) (try once)
//   container GROUP                                FileManager.containerURL(forSecurityApplicationGroupIdentifier:)
//   selfhosted MANIFEST                            AssetPackManifest(contentsOf:appGroupID:), then
//                                                  scheduleDownload of each of allDownloads(for: nil)
//   (asset packs: AssetPackManager; see Packs.swift)
//   quit
//
// While it holds the lock it appends "enter PID" and, HOLD_MS later, "leave PID" to FILE, so a
// test can check that two instances are never inside at once.
//
// Environment: BA_BUNDLE_IDENTIFIER and BA_SOCKET (read by BackgroundAssets), BA_TEST_APP_GROUP
// (the app group of scheduled downloads), BA_TEST_APP_CREDENTIAL ("user:password" to answer
// challenges with), BA_TEST_APP_MOVE_TO (a folder to move finished files into).
import BackgroundAssets
import CCrypto
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

let environment = ProcessInfo.processInfo.environment
let group = environment["BA_TEST_APP_GROUP"] ?? "group.com.example.test"
let outputLock = NSLock()

/// Prints one JSON line and flushes it (FileHandle writes straight to the descriptor).
func emit(_ object: [String: Any]) {
    guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
    outputLock.withLock { FileHandle.standardOutput.write(data + Data("\n".utf8)) }
}

func describe(_ download: BADownload) -> [String: Any] {
    [
        "identifier": download.identifier, "uniqueIdentifier": download.uniqueIdentifier,
        "state": download.state.rawValue, "essential": download.isEssential,
        "priority": download.priority.rawValue,
    ]
}

func describe(_ error: any Error) -> [String: Any] {
    let error = error as NSError
    var described: [String: Any] = ["domain": error.domain, "code": error.code, "reason": error.localizedDescription]
    if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError {
        described["underlyingDomain"] = underlying.domain
        described["underlyingCode"] = underlying.code
    }
    return described
}

func sha256(_ data: Data) -> String {
    var digest = [UInt8](repeating: 0, count: 32)
    var length: UInt32 = 0
    let context = EVP_MD_CTX_new()
    defer { EVP_MD_CTX_free(context) }
    EVP_DigestInit_ex(context, EVP_sha256(), nil)
    data.withUnsafeBytes { _ = EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
    EVP_DigestFinal_ex(context, &digest, &length)
    return digest.prefix(Int(length)).map { String(format: "%02x", $0) }.joined()
}

final class Delegate: BADownloadManagerDelegate {
    func downloadDidBegin(_ download: BADownload) {
        emit(["callback": "began"].merging(describe(download)) { a, _ in a })
    }

    func downloadDidPause(_ download: BADownload) {
        emit(["callback": "paused"].merging(describe(download)) { a, _ in a })
    }

    func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        emit([
            "callback": "progress", "identifier": download.identifier, "bytesWritten": bytesWritten,
            "totalBytesWritten": totalBytesWritten, "totalBytesExpectedToWrite": totalBytesExpectedToWrite,
        ])
    }

    func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge
    ) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    {
        emit([
            "callback": "challenge", "identifier": download.identifier,
            "realm": challenge.protectionSpace.realm ?? "", "host": challenge.protectionSpace.host,
            "method": challenge.protectionSpace.authenticationMethod,
        ])
        guard let pair = environment["BA_TEST_APP_CREDENTIAL"], let colon = pair.firstIndex(of: ":") else {
            return (.performDefaultHandling, nil)
        }
        let credential = URLCredential(
            user: String(pair[..<colon]), password: String(pair[pair.index(after: colon)...]), persistence: .none)
        return (.useCredential, credential)
    }

    func download(_ download: BADownload, failedWithError error: any Error) {
        emit(["callback": "failed", "identifier": download.identifier, "error": describe(error)])
    }

    func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
        var line: [String: Any] = ["callback": "finished", "identifier": download.identifier, "path": fileURL.path]
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: fileURL.path, isDirectory: &isFolder), isFolder.boolValue {
            // A self-hosted asset pack: its folder in the app group.
            line["folder"] = true
        }
        if let data = try? Data(contentsOf: fileURL) {
            line["size"] = data.count
            line["sha256"] = sha256(data)
        }
        if let folder = environment["BA_TEST_APP_MOVE_TO"] {
            let target = URL(fileURLWithPath: folder).appendingPathComponent(download.identifier)
            do {
                try FileManager.default.moveItem(at: fileURL, to: target)
                line["movedTo"] = target.path
            } catch {
                line["moveError"] = "\(error)"
            }
        }
        emit(line)
    }
}

/// Appends a line to `path` (O_APPEND: whole lines, in order, across processes).
func append(_ line: String, to path: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    guard fd >= 0 else { return }
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

/// The work done while holding the lock.
func holdLock(milliseconds: Int, file: String, form: String) {
    let pid = getpid()
    append("enter \(pid)", to: file)
    emit(["command": form, "event": "locked", "pid": pid])
    usleep(useconds_t(milliseconds * 1000))  // the app's "work" inside the critical section
    append("leave \(pid)", to: file)
}

/// Runs an async command to completion on this (main) thread's behalf.
func blocking(_ work: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        await work()
        done.signal()
    }
    done.wait()
}

func currentDownload(_ identifier: String) -> BADownload? {
    (try? BADownloadManager.shared.fetchCurrentDownloads())?.first { $0.identifier == identifier }
}

func run(_ words: [String]) -> Bool {
    let manager = BADownloadManager.shared
    guard let command = words.first else { return true }
    func result(_ body: () throws -> [String: Any]) {
        do {
            emit(["command": command, "ok": true].merging(try body()) { a, _ in a })
        } catch {
            emit(["command": command, "ok": false, "error": describe(error)])
        }
    }
    switch (command, words.count) {
    case ("schedule", 4...):
        result {
            guard let url = URL(string: words[2]), let size = Int(words[3]) else {
                throw NSError(domain: "BATestApp", code: 64, userInfo: [NSLocalizedDescriptionKey: "bad arguments"])
            }
            var download = BAURLDownload(
                identifier: words[1], request: URLRequest(url: url), essential: words.contains("essential"),
                fileSize: size, applicationGroupIdentifier: group, priority: .default)
            if let hash = words.first(where: { $0.hasPrefix("sha256=") }) {
                download = download.baVerifyingSHA256(String(hash.dropFirst("sha256=".count)))
            }
            try manager.scheduleDownload(download)
            return ["identifier": download.identifier, "uniqueIdentifier": download.uniqueIdentifier]
        }
    case ("selfhosted", 2):
        result {
            let manifest = try AssetPackManifest(contentsOf: URL(fileURLWithPath: words[1]), appGroupID: group)
            let downloads = manifest.allDownloads(for: nil)
            for download in downloads { try manager.scheduleDownload(download) }
            return ["identifiers": downloads.map(\.identifier).sorted()]
        }
    case ("promote", 2), ("cancel", 2):
        result {
            // A download of that identifier that basd does not know gets 101 from basd.
            let download =
                currentDownload(words[1])
                ?? BAURLDownload(
                    identifier: words[1],
                    request: URLRequest(url: URL(string: "http://127.0.0.1/unknown") ?? URL(fileURLWithPath: "/")),
                    fileSize: 0,
                    applicationGroupIdentifier: group)
            if command == "promote" {
                try manager.startForegroundDownload(download)
            } else {
                try manager.cancel(download)
            }
            return ["identifier": words[1]]
        }
    case ("list", 1):
        result { ["downloads": try manager.fetchCurrentDownloads().map(describe)] }
    case ("alist", 1):
        blocking {
            do {
                let downloads = try await manager.currentDownloads
                emit(["command": command, "ok": true, "downloads": downloads.map(describe)])
            } catch {
                emit(["command": command, "ok": false, "error": describe(error)])
            }
        }
    case ("lock", 3):
        let (hold, file) = (Int(words[1]) ?? 0, words[2])
        manager.withExclusiveControl { acquired, error in
            if acquired { holdLock(milliseconds: hold, file: file, form: command) }
            emit(["command": command, "ok": acquired, "error": error.map(describe) ?? NSNull()])
        }
    case ("alock", 3):
        let (hold, file) = (Int(words[1]) ?? 0, words[2])
        blocking {
            do {
                try await manager.withExclusiveControl { holdLock(milliseconds: hold, file: file, form: command) }
                emit(["command": command, "ok": true])
            } catch {
                emit(["command": command, "ok": false, "error": describe(error)])
            }
        }
    case ("trylock", 1):
        manager.withExclusiveControl(beforeDate: Date()) { acquired, error in
            emit(["command": command, "ok": acquired, "error": error.map(describe) ?? NSNull()])
        }
    case ("container", 2):
        let url = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: words[1])
        emit(["command": command, "ok": true, "group": words[1], "path": url?.path ?? NSNull()])
    case ("quit", _):
        return false
    default:
        if runPackCommand(words) { break }
        emit(["command": command, "ok": false, "error": ["reason": "unknown command or wrong arguments"]])
    }
    return true
}

let delegate = Delegate()
BADownloadManager.shared.delegate = delegate
emit(["event": "ready", "pid": getpid()])
while let line = readLine() {
    guard run(line.split(separator: " ").map(String.init)) else { break }
}
emit(["event": "bye"])
withExtendedLifetime(delegate) {}
