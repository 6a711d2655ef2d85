import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Bytes behind a lock.
final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func withLock<T>(_ body: (inout Data) -> T) -> T { lock.withLock { body(&data) } }
}

/// A deterministic generator for fuzzing (SplitMix64).
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Polls `condition` every 2 ms until it holds or `timeout` seconds pass; whether it held.
func eventually(timeout: Double = 30, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while Date() < deadline {
        if try condition() { return true }
        usleep(2000)
    }
    return try condition()
}
