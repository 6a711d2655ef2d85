internal import CCrypto
import SystemPackage

/// Streaming SHA-256 (OpenSSL's EVP interface).
///
/// Not thread-safe: one hasher is fed by one user at a time.
///
/// ```swift
/// let hasher = SHA256Hasher()
/// for chunk in chunks { chunk.withUnsafeBytes { hasher.update($0) } }
/// let digest = hasher.finalizeHex()  // 64 lowercase hex digits
/// ```
package final class SHA256Hasher {
    private let context: OpaquePointer?

    /// A hasher that has taken no bytes yet.
    package init() {
        context = EVP_MD_CTX_new()
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Feeds `bytes` to the digest.
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

    /// The SHA-256 of the file at `path` (read 1 MiB at a time, `EINTR` retried), as lowercase
    /// hex. A symbolic link there is not followed (it fails with `ELOOP`): basd hashes files in
    /// folders an extension may have written to.
    ///
    /// - Throws: the ``Errno`` of the `open` or `read` that failed.
    package static func hex(ofFileAt path: String) throws -> String {
        let file = try FileDescriptor.open(FilePath(path), .readOnly, options: [.noFollow, .closeOnExec])
        return try file.closeAfter {
            let hasher = SHA256Hasher()
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let count = try buffer.withUnsafeMutableBytes { try file.read(into: $0) }
                if count == 0 { break }
                buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            }
            return hasher.finalizeHex()
        }
    }
}
