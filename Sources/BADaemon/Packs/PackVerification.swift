import BACore
import BADownloadEngine
import BAPacks
import Foundation

/// `ba packs verify`: a local version's files against its index (size and SHA-256 of each).
enum PackVerification {
    /// What does not match, one line per file; empty when every file does.
    static func verify(root: String, id: String, version: Int, index indexPath: String) -> [String] {
        let index: PackIndex
        do {
            index = try JSONDecoder().decode(PackIndex.self, from: Data(RegularFile.read(indexPath, limit: 256 << 20)))
        } catch {
            return ["its index \(indexPath) cannot be read (\(error)): `ba packs ensure --latest` installs it again"]
        }
        let folder = root + "/" + PackInstallation.packsFolder(id: id) + "/\(version)"
        var problems: [String] = []
        for file in index.files {
            let path = folder + "/" + file.path
            let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else {
                problems.append("\(file.path): cannot be opened (\(String(cString: strerror(errno))))")
                continue
            }
            defer { close(fd) }
            let hasher = SHA256Hasher()
            var size: Int64 = 0
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                size += Int64(count)
                buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            }
            if size != file.size {
                problems.append("\(file.path): \(size) bytes, not \(file.size)")
            } else if hasher.finalizeHex() != file.sha256 {
                problems.append("\(file.path): its SHA-256 does not match the index (changed on disk)")
            }
        }
        return problems
    }
}
