/// Where content-defined chunks end: FastCDC (Xia et al., "The Design of Fast Content-Defined
/// Chunking for Data Deduplication Based Storage Systems", 2020), as packs cut their files.
///
/// A gear hash runs over the bytes (`hash = (hash << 1) &+ gear[byte]`: each byte's influence
/// leaves the 64-bit hash after 64 more bytes, so the hash is of a sliding window) and a chunk
/// ends where the hash's top bits are all zero, never before ``Parameters/minimum`` bytes and
/// always at ``Parameters/maximum``. Because a cut depends only on the bytes just before it, an
/// insertion or deletion moves the cuts around it and no others: the chunks after it are the same
/// bytes, so a new version of a file shares them with the old one and only the chunks around a
/// change are fetched. Normalized chunking (a stricter test before the average size, a looser one
/// after) keeps most chunks near the average.
///
/// The gear table and the masks are part of the pack format (version 1): changing them moves
/// every cut, and no chunk of an old version would be found in a new one. `ContentDefinedChunkerTests`
/// pins both. The chunker is I/O-free: feed it bytes, it says where the chunk ends.
package struct ContentDefinedChunker: Sendable {
    /// Chunk sizes, in bytes.
    package struct Parameters: Sendable, Hashable, Codable {
        /// No chunk is shorter, but a file's last.
        package var minimum: Int
        /// The size chunks gather around; a power of two.
        package var average: Int
        /// No chunk is longer.
        package var maximum: Int

        /// Sizes for `average` (a power of two, 256 B to 64 MiB): a quarter of it at least, four
        /// times it at most, as casync does.
        package init(average: Int) throws(ChunkingError) {
            try self.init(minimum: average / 4, average: average, maximum: average * 4)
        }

        /// Sizes as given; `minimum < average < maximum`, `average` a power of two, 256 B to 64 MiB.
        package init(minimum: Int, average: Int, maximum: Int) throws(ChunkingError) {
            guard average >= 256, average <= 64 << 20, average & (average - 1) == 0 else {
                throw ChunkingError("the average chunk size \(average) is not a power of two from 256 B to 64 MiB")
            }
            guard minimum >= 64, minimum < average, maximum > average, maximum <= 256 << 20 else {
                throw ChunkingError(
                    "chunk sizes must satisfy 64 ≤ minimum < average < maximum ≤ 256 MiB; "
                        + "got \(minimum), \(average), \(maximum)")
            }
            self.minimum = minimum
            self.average = average
            self.maximum = maximum
        }
    }

    package let parameters: Parameters
    /// The test before the average size: two bits more than the average's, so cuts are rarer.
    let strictMask: UInt64
    /// The test after it: two bits fewer, so cuts come sooner.
    let looseMask: UInt64

    package init(_ parameters: Parameters) {
        self.parameters = parameters
        let bits = parameters.average.trailingZeroBitCount
        strictMask = Self.topBits(bits + 2)
        looseMask = Self.topBits(max(1, bits - 2))
    }

    /// A mask of the `count` most significant bits: the bits the most recent 64 bytes all reach.
    static func topBits(_ count: Int) -> UInt64 { count >= 64 ? .max : ~(UInt64.max >> UInt64(count)) }

    /// The length of the chunk that starts at the beginning of `bytes`. `bytes` must hold at least
    /// ``Parameters/maximum`` bytes unless it is the end of the data (then the rest may be
    /// shorter, and is cut where the content says or at its end).
    package func chunkLength(of bytes: UnsafeRawBufferPointer) -> Int {
        let count = bytes.count
        guard count > parameters.minimum else { return count }
        let end = min(count, parameters.maximum)
        let normal = min(end, parameters.average)
        var hash: UInt64 = 0
        var index = parameters.minimum
        let gear = Self.gear
        return gear.withUnsafeBufferPointer { gear in
            while index < normal {
                hash = (hash << 1) &+ gear[Int(bytes[index])]
                if hash & strictMask == 0 { return index + 1 }
                index += 1
            }
            while index < end {
                hash = (hash << 1) &+ gear[Int(bytes[index])]
                if hash & looseMask == 0 { return index + 1 }
                index += 1
            }
            return end
        }
    }

    /// The lengths of all chunks of `bytes`, in order (they add up to its count).
    package func chunkLengths(of bytes: UnsafeRawBufferPointer) -> [Int] {
        var lengths: [Int] = []
        var start = 0
        while start < bytes.count {
            let length = chunkLength(of: UnsafeRawBufferPointer(rebasing: bytes[start...]))
            lengths.append(length)
            start += length
        }
        return lengths
    }

    /// The gear table of pack format 1: 256 values of SplitMix64 from the seed 0x6261_7061_636B_7331
    /// ("bapacks1"). Never change it (see the type's documentation).
    static let gear: [UInt64] = {
        var state: UInt64 = 0x6261_7061_636B_7331
        return (0..<256).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }()
}

/// Chunk sizes that cannot be used, with what is wrong.
package struct ChunkingError: Error, Sendable, Hashable, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
