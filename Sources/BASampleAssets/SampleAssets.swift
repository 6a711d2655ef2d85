/// The bytes of the sample app's generated assets (`Examples/SampleApp`).
///
/// The sample's big assets are not committed: a catalog or manifest entry carries
/// `"generate": {"seed": N, "size": BYTES}` instead, meaning "this file's bytes are
/// `SampleAssets.bytes(seed: N, size: BYTES)`", and its `sha256` is that output's digest
/// (`BASampleAssetsTests` checks every entry). `ba demo` and the tests write the files out before
/// serving them.
///
/// The generator is SplitMix64, so it can be reimplemented anywhere: the state starts at `seed`
/// (as 64-bit two's complement); for each 8-byte block, `state += 0x9E3779B97F4A7C15`, then
/// `z = state`, `z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9`, `z = (z ^ (z >> 27)) * 0x94D049BB133111EB`,
/// `z ^= z >> 31` (all modulo 2^64), and `z`'s bytes follow in little-endian order; the output is
/// cut to `size` bytes. Not random enough for anything but sample files.
///
/// ```swift
/// let level = SampleAssets.bytes(seed: 2, size: 4 << 20)   // levels/level-2.pak
/// ```
package enum SampleAssets {
    /// The `size` bytes generated from `seed` (the same on every machine and every run).
    ///
    /// - Parameters:
    ///   - seed: The entry's `generate.seed`.
    ///   - size: The entry's `generate.size`, in bytes; 0 or less gives no bytes.
    package static func bytes(seed: Int, size: Int) -> [UInt8] {
        guard size > 0 else { return [] }
        var state = UInt64(bitPattern: Int64(seed))
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            var offset = 0
            while offset < size {
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                z ^= z >> 31
                let count = min(8, size - offset)
                for index in 0..<count {
                    buffer[offset + index] = UInt8(truncatingIfNeeded: z >> (8 * UInt64(index)))
                }
                offset += count
            }
            initialized = size
        }
    }
}
