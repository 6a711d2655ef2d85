import CCrypto

/// SHA-256 through OpenSSL's libcrypto (what the download engine uses too), as lowercase hex.
package struct SHA256Digest: ~Copyable {
    private let context: OpaquePointer

    package init() {
        context = EVP_MD_CTX_new()
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// The digest of what was fed, as 64 lowercase hex digits.
    package consuming func hex() -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        return Self.hex(digest)
    }

    /// The SHA-256 of `bytes`.
    package static func hex(of bytes: UnsafeRawBufferPointer) -> String {
        var digest = SHA256Digest()
        digest.update(bytes)
        return digest.hex()
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
