import BAPackManifest
import CCrypto
import Foundation

/// Ed25519 signatures of download manifests, through OpenSSL's libcrypto (already linked for
/// SHA-256; it spares the build swift-crypto's copy of BoringSSL). Keys are the raw 32-byte forms,
/// in base64: the private key file holds the seed, `FILE.pub` and the app's `Info.plist` key
/// `BAAssetPackPublicKey` the public key. The signature is 64 bytes, in base64.
package enum PackSigning {
    /// A new key pair: (private seed, public key), 32 bytes each.
    package static func generateKeyPair() throws(PackError) -> (privateKey: [UInt8], publicKey: [UInt8]) {
        var generator = SystemRandomNumberGenerator()  // getrandom(2): cryptographically secure
        let seed = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return (seed, try publicKey(of: seed))
    }

    /// The public key of a 32-byte private seed.
    package static func publicKey(of seed: [UInt8]) throws(PackError) -> [UInt8] {
        let key = try privateKey(seed)
        defer { EVP_PKEY_free(key) }
        var raw = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard EVP_PKEY_get_raw_public_key(key, &raw, &length) == 1, length == 32 else {
            throw PackError("libcrypto could not derive the Ed25519 public key")
        }
        return raw
    }

    /// The Ed25519 signature (64 bytes) of `message` with the private seed.
    package static func sign(_ message: [UInt8], seed: [UInt8]) throws(PackError) -> [UInt8] {
        let key = try privateKey(seed)
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { throw PackError("libcrypto is out of memory") }
        defer { EVP_MD_CTX_free(context) }
        var signature = [UInt8](repeating: 0, count: 64)
        var length = 64
        guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1,
            EVP_DigestSign(context, &signature, &length, message, message.count) == 1, length == 64
        else { throw PackError("libcrypto could not sign with Ed25519") }
        return signature
    }

    /// Whether `signature` is the Ed25519 signature of `message` by `publicKey`.
    package static func verify(_ message: [UInt8], signature: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == 64, publicKey.count == 32,
            let key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, publicKey, 32)
        else { return false }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1 else { return false }
        return EVP_DigestVerify(context, signature, 64, message, message.count) == 1
    }

    /// A key from its base64 text (a key file's content, or `BAAssetPackPublicKey`).
    package static func key(base64 text: String, what: String) throws(PackError) -> [UInt8] {
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), data.count == 32
        else {
            throw PackError("\(what) is not a base64 Ed25519 key of 32 bytes (as `ba pack keygen` writes)")
        }
        return Array(data)
    }

    private static func privateKey(_ seed: [UInt8]) throws(PackError) -> OpaquePointer {
        guard seed.count == 32, let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seed, 32) else {
            throw PackError("an Ed25519 private key is 32 bytes")
        }
        return key
    }
}
