import BAPurge
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An app group container in a fresh temporary directory, laid out as basd lays it out
/// (`…/groups/GROUP/.background-assets/downloads`), with real files delivered into it.
/// Call `remove()` when done.
struct TestContainer {
    /// `…/ba-purge-UUID`: everything the test makes is under it.
    let base: String
    /// `…/groups/group.com.example.test`: the root the locator walks.
    let root: String

    init() throws {
        base = FileManager.default.temporaryDirectory.appendingPathComponent("ba-purge-\(UUID().uuidString)").path
        root = base + "/groups/group.com.example.test"
        try FileManager.default.createDirectory(atPath: downloads, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/Library", withIntermediateDirectories: true)
    }

    var downloads: String { root + "/.background-assets/downloads" }

    func remove() { try? FileManager.default.removeItem(atPath: base) }

    /// Writes `size` bytes at the delivery path, sets its access and modification times (the
    /// modification time is part of the identity, so before recording), and records it.
    func deliver(
        _ identifier: String, size: Int = 100, finishedAt: Date = day(1), modified: Date = day(1),
        accessed: Date = day(1)
    ) throws -> TrackedAsset {
        let uniqueID = UUID().uuidString
        let path = downloads + "/\(uniqueID)-\(identifier)"
        try Data(repeating: 0x61, count: size).write(to: URL(fileURLWithPath: path))
        try setTimes(path, accessed: accessed, modified: modified)
        return try TrackedAsset(
            recordingFileAt: path, sha256: String(repeating: "0", count: 64), finishedAt: finishedAt,
            appID: "com.example.test", downloadUniqueID: uniqueID, identifier: identifier)
    }

    /// Delivers and then moves the file into `Library/` as an app does; returns the record and
    /// the new path.
    func deliverAndMove(
        _ identifier: String, size: Int = 100, finishedAt: Date = day(1), accessed: Date = day(1)
    ) throws -> (asset: TrackedAsset, path: String) {
        let asset = try deliver(identifier, size: size, finishedAt: finishedAt, accessed: accessed)
        let path = root + "/Library/\(identifier)"
        try FileManager.default.moveItem(atPath: asset.deliveredPath, toPath: path)
        return (asset, path)
    }

    /// Appends bytes to a file (a modification).
    func append(to path: String) throws {
        let handle = try requireHandle(path)
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("more".utf8))
    }
}

/// Noon UTC on 2026-11-`n`.
func day(_ n: Int) -> Date {
    Date(timeIntervalSince1970: 1_793_534_400 + Double(n - 1) * 86_400)
}

/// Sets a file's access and modification times exactly (`utimensat`).
func setTimes(_ path: String, accessed: Date, modified: Date) throws {
    func spec(_ date: Date) -> timespec {
        timespec(tv_sec: Int(date.timeIntervalSince1970), tv_nsec: 0)
    }
    let times = [spec(accessed), spec(modified)]
    guard utimensat(AT_FDCWD, path, times, 0) == 0 else {
        throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
}

private func requireHandle(_ path: String) throws -> FileHandle {
    guard let handle = FileHandle(forUpdatingAtPath: path) else { throw POSIXError(.ENOENT) }
    return handle
}
