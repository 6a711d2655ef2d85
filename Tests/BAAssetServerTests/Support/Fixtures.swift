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
