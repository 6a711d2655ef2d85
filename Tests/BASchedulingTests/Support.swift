import Foundation

/// The manual clock: fixed dates the tests advance by hand.
enum Clock {
    /// 2025-06-15T15:06:40Z.
    static let start = Date(timeIntervalSince1970: 1_750_000_000)
    static let hour: TimeInterval = 3_600
    static let day: TimeInterval = 86_400
}

/// A fresh directory under the system's temporary directory, removed by ``remove()``.
struct TemporaryDirectory {
    let path: String

    init() throws {
        path =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("BASchedulingTests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    /// Writes `text` to `name` by writing a new file and renaming it over the old one (a new inode,
    /// as most editors save), unless `atomically` is false.
    @discardableResult
    func write(_ text: String, to name: String, atomically: Bool = true) throws -> String {
        let target = file(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: target), options: atomically ? [.atomic] : [])
        return target
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
