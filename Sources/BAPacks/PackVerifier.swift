import BAHashing
import BAPackManifest
import Foundation

/// `ba pack verify`: checks every index in a publish folder against its chunk store: each chunk is
/// there, is one zstd frame of the length the index gives, and has its SHA-256; each file's
/// chunks add up to its size and SHA-256. What a CDN would serve is what a device will check.
package enum PackVerifier {
    /// What a verification found.
    package struct Report: Sendable, Hashable {
        /// Indexes read, files and distinct chunks checked.
        package var indexes = 0
        package var files = 0
        package var chunks = 0
        /// Everything wrong, one line each, saying which index, file and chunk.
        package var problems: [String] = []
    }

    package static func verify(publishDirectory: String) -> Report {
        var report = Report()
        let packs = publishDirectory + "/packs"
        // A folder that cannot be listed is a problem, never "nothing to check".
        let ids: [String]
        do { ids = try PackFileSystem.names(in: packs, missingIsEmpty: true) } catch {
            report.problems.append("\(error)")
            return report
        }
        if ids.isEmpty { report.problems.append("\(packs) holds no pack indexes: run `ba pack build` first") }
        var verified: [String: Bool] = [:]
        for id in ids {
            let names: [String]
            do { names = try PackFileSystem.names(in: packs + "/" + id) } catch {
                report.problems.append("\(error)")
                continue
            }
            for name in names where name.hasSuffix(".json") {
                let path = packs + "/" + id + "/" + name
                // As a device reads it: a format 2 root with its parts, each checked by its SHA-256.
                let index: PackIndex
                do {
                    index = try PackIndex.read(path)
                } catch {
                    report.problems.append("not a pack index a device takes: \(error)")
                    continue
                }
                report.indexes += 1
                for file in index.files {
                    report.files += 1
                    verify(file, of: path, publishDirectory: publishDirectory, verified: &verified, &report)
                }
                verifyBundles(of: index, at: path, publishDirectory: publishDirectory, &report)
            }
        }
        return report
    }

    /// Each bundle holds, byte for byte, the frames of its chunks in the chunk store (which
    /// ``verify(_:of:publishDirectory:verified:_:)`` checks).
    private static func verifyBundles(
        of index: PackIndex, at indexPath: String, publishDirectory: String, _ report: inout Report
    ) {
        guard let bundles = index.bundles else { return }
        guard index.bundleLayout != nil else {
            report.problems.append("\(indexPath): its bundles do not add up to its chunks")
            return
        }
        let chunks = index.distinctChunks
        var next = 0
        for bundle in bundles {
            defer { next += bundle.chunks }
            let path = publishDirectory + "/" + bundle.path
            guard let bytes = FileManager.default.contents(atPath: path) else {
                report.problems.append("\(indexPath): bundle \(path) is missing")
                continue
            }
            guard Int64(bytes.count) == bundle.size else {
                report.problems.append("\(indexPath): bundle \(path) holds \(bytes.count) bytes, not \(bundle.size)")
                continue
            }
            var offset = 0
            for chunk in chunks[next..<(next + bundle.chunks)] {
                let frame = FileManager.default.contents(
                    atPath: publishDirectory + "/" + PackIndex.chunkPath(chunk.sha256))
                if frame != bytes[offset..<(offset + chunk.storedLength)] {
                    report.problems.append(
                        "\(indexPath): bundle \(path) at \(offset) does not hold chunk \(chunk.sha256) as the store does"
                    )
                }
                offset += chunk.storedLength
            }
        }
    }

    private static func verify(
        _ file: PackIndex.File, of index: String, publishDirectory: String, verified: inout [String: Bool],
        _ report: inout Report
    ) {
        let digest = SHA256Hasher()
        var size: Int64 = 0
        // Every bad chunk is reported (a repair fetches them all); the file's own checks need all good.
        var broken = false
        for chunk in file.chunks {
            size += Int64(chunk.length)
            let path = publishDirectory + "/" + PackIndex.chunkPath(chunk.sha256)
            guard let frame = FileManager.default.contents(atPath: path) else {
                report.problems.append("\(index): \(file.path): chunk \(chunk.sha256) is missing (\(path))")
                broken = true
                continue
            }
            let decompressed: Result<[UInt8], PackError> = frame.withUnsafeBytes { frame in
                do throws(PackError) {
                    return .success(try Zstd.decompress(frame, length: chunk.length))
                } catch {
                    return .failure(error)
                }
            }
            do throws(PackError) {
                let bytes = try decompressed.get()
                if verified[chunk.sha256] == nil {
                    report.chunks += 1
                    let actual = bytes.withUnsafeBytes { SHA256Hasher.hex(of: $0) }
                    verified[chunk.sha256] = actual == chunk.sha256
                    if actual != chunk.sha256 {
                        report.problems.append(
                            "\(index): \(file.path): chunk \(path) holds bytes with SHA-256 \(actual), not its name")
                    }
                }
                guard verified[chunk.sha256] == true else {
                    broken = true
                    continue
                }
                bytes.withUnsafeBytes { digest.update($0) }
            } catch {
                report.problems.append("\(index): \(file.path): chunk \(path): \(error)")
                broken = true
            }
        }
        guard !broken else { return }
        guard size == file.size else {
            report.problems.append("\(index): \(file.path): its chunks hold \(size) bytes, not \(file.size)")
            return
        }
        let actual = digest.finalizeHex()
        if actual != file.sha256 {
            report.problems.append("\(index): \(file.path): its chunks give SHA-256 \(actual), not \(file.sha256)")
        }
    }
}
