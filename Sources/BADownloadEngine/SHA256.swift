internal import CCrypto
import Foundation

/// Streaming SHA-256 (OpenSSL's EVP interface).
package final class SHA256Hasher {
    private let context: OpaquePointer?

    package init() {
        context = EVP_MD_CTX_new()
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// The digest as lowercase hex; the hasher is done after this.
    package func finalizeHex() -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        let hex: [Character] = Array("0123456789abcdef")
        var out = ""
        out.reserveCapacity(64)
        for byte in digest.prefix(Int(length)) {
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0x0f)])
        }
        return out
    }
}

extension SHA256Hasher {
    /// The SHA-256 of `bytes`, as lowercase hex.
    package static func hex(of bytes: [UInt8]) -> String { bytes.withUnsafeBytes { hex(of: $0) } }

    /// The SHA-256 of `bytes`, as lowercase hex.
    package static func hex(of bytes: UnsafeRawBufferPointer) -> String {
        let hasher = SHA256Hasher()
        hasher.update(bytes)
        return hasher.finalizeHex()
    }

    /// The SHA-256 of the file at `path` (read 1 MiB at a time), as lowercase hex. A symbolic link
    /// there is not followed (it fails with `ELOOP`): basd hashes files in folders an extension
    /// may have written to.
    package static func hex(ofFileAt path: String) throws -> String {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        defer { try? handle.close() }
        let hasher = SHA256Hasher()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            chunk.withUnsafeBytes { hasher.update($0) }
        }
        return hasher.finalizeHex()
    }
}
