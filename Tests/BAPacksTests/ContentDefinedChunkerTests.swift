import Testing

@testable import BAPacks

/// FastCDC as packs cut files: sizes within bounds, cuts that depend only on nearby bytes (an
/// insertion changes the chunks around it and no others), and the format's gear table and cuts
/// pinned, so that a change that would move every chunk of every published pack fails here.
@Suite("content-defined chunking")
struct ContentDefinedChunkerTests {
    /// Deterministic pseudo-random bytes (SplitMix64), as compressed assets look.
    static func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 8)
        while bytes.count < count {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            withUnsafeBytes(of: z.littleEndian) { bytes += $0 }
        }
        return Array(bytes.prefix(count))
    }

    static func chunks(_ bytes: [UInt8], _ chunker: ContentDefinedChunker) -> [ArraySlice<UInt8>] {
        var start = 0
        return bytes.withUnsafeBytes { chunker.chunkLengths(of: $0) }.map { length in
            defer { start += length }
            return bytes[start..<start + length]
        }
    }

    @Test func chunksStayWithinTheirBoundsAndCoverTheData() throws {
        let parameters = try ContentDefinedChunker.Parameters(average: 4096)
        let chunker = ContentDefinedChunker(parameters)
        for (name, bytes) in [
            ("random", Self.randomBytes(1 << 20, seed: 1)), ("zeros", [UInt8](repeating: 0, count: 300_000)),
            ("short", Self.randomBytes(1000, seed: 2)), ("empty", []),
        ] {
            let lengths = bytes.withUnsafeBytes { chunker.chunkLengths(of: $0) }
            #expect(lengths.reduce(0, +) == bytes.count, "\(name)")
            for (index, length) in lengths.enumerated() {
                #expect(length <= parameters.maximum, "\(name) chunk \(index)")
                if index < lengths.count - 1 { #expect(length >= parameters.minimum, "\(name) chunk \(index)") }
            }
        }
        // Random data gathers around the average.
        let random = Self.randomBytes(4 << 20, seed: 3)
        let lengths = random.withUnsafeBytes { chunker.chunkLengths(of: $0) }
        let mean = Double(random.count) / Double(lengths.count)
        #expect(mean > 2048 && mean < 8192, "mean chunk \(mean) B for an average of 4096")
    }

    @Test(arguments: [1, 100, 4096, 1 << 20])
    func anInsertionChangesOnlyTheChunksAroundIt(inserted: Int) throws {
        let chunker = ContentDefinedChunker(try .init(average: 16_384))
        let old = Self.randomBytes(4 << 20, seed: 4)
        var new = old
        new.insert(contentsOf: Self.randomBytes(inserted, seed: 5), at: 2_000_000)
        let oldChunks = Self.chunks(old, chunker)
        let newChunks = Self.chunks(new, chunker)
        let known = Set(oldChunks.map { Array($0) })
        let fresh = newChunks.filter { !known.contains(Array($0)) }
        let freshBytes = fresh.reduce(0) { $0 + $1.count }
        // The inserted bytes, plus at most the chunk before and two after (resynchronizing).
        #expect(freshBytes <= inserted + 3 * chunker.parameters.maximum, "\(fresh.count) new chunks, \(freshBytes) B")
        #expect(
            newChunks.prefix { $0.endIndex <= 2_000_000 - chunker.parameters.maximum }.allSatisfy {
                known.contains(Array($0))
            })
    }

    @Test func aDeletionToo() throws {
        let chunker = ContentDefinedChunker(try .init(average: 16_384))
        let old = Self.randomBytes(4 << 20, seed: 6)
        var new = old
        new.removeSubrange(1_000_000..<1_000_500)
        let known = Set(Self.chunks(old, chunker).map { Array($0) })
        let freshBytes = Self.chunks(new, chunker).filter { !known.contains(Array($0)) }.reduce(0) { $0 + $1.count }
        #expect(freshBytes <= 3 * chunker.parameters.maximum)
    }

    @Test func sizesOutsideTheRulesAreRefusedSayingWhy() {
        #expect(throws: ChunkingError.self) { try ContentDefinedChunker.Parameters(average: 3000) }
        #expect(throws: ChunkingError.self) { try ContentDefinedChunker.Parameters(average: 128) }
        #expect(throws: ChunkingError.self) {
            try ContentDefinedChunker.Parameters(minimum: 8192, average: 4096, maximum: 16_384)
        }
        #expect(throws: ChunkingError.self) {
            try ContentDefinedChunker.Parameters(minimum: 1024, average: 4096, maximum: 4096)
        }
    }

    /// Pack format 1: the gear table and the cuts of a fixed input. If this fails, the change
    /// moves every chunk of every published pack: make it a new format version instead.
    @Test func theFormatsGearTableAndCutsArePinned() throws {
        let gear = ContentDefinedChunker.gear
        #expect(gear.count == 256)
        #expect(gear.reduce(0, ^) == Self.pinnedGearXor)
        let chunker = ContentDefinedChunker(try .init(average: 65_536))
        let bytes = Self.randomBytes(2 << 20, seed: 7)
        let lengths = bytes.withUnsafeBytes { chunker.chunkLengths(of: $0) }
        #expect(Array(lengths.prefix(8)) == Self.pinnedCuts, "\(lengths.prefix(8))")
    }

    static let pinnedGearXor: UInt64 = 5_585_549_183_775_528_934
    static let pinnedCuts = [63_099, 80_484, 70_832, 86_577, 84_398, 116_621, 100_903, 143_627]
}
