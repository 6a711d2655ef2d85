import BAAssetServer
import Foundation

/// `count` bytes of a pattern that differs at every nearby offset, so a misplaced range shows.
func sampleBytes(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 31 &+ seed &* 7) % 251) }
}

/// Runs `body` with a fresh server on 127.0.0.1 and a free port, and always shuts it down.
func withServer<T>(root: URL? = nil, _ body: (AssetServer) async throws -> T) async throws -> T {
    let server = try await AssetServer.start(root: root)
    do {
        let result = try await body(server)
        try await server.shutdown()
        return result
    } catch {
        try? await server.shutdown()
        throw error
    }
}

/// A temporary directory for one test, removed by `remove()`.
struct TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ba-asset-server-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Writes `contents` to `name` (which may contain folders) and returns its URL.
    @discardableResult
    func write(_ name: String, _ contents: [UInt8]) throws -> URL {
        let file = url.appendingPathComponent(name)
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(contents).write(to: file)
        return file
    }

    func remove() { try? FileManager.default.removeItem(at: url) }
}
