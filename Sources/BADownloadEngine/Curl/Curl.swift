internal import CCurl
import Foundation
import Synchronization

/// A mutex usable from non-async code in this module.
final class NSLockLike: @unchecked Sendable {
    private let lock = NSLock()
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}

/// libcurl's global state, initialized once before any handle exists.
enum CurlGlobal {
    static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
}

/// A `CURLcode` other than `CURLE_OK`, as a typed value.
struct CurlCode: Error, CustomStringConvertible {
    let rawValue: UInt32
    var description: String { String(cString: curl_easy_strerror(CURLcode(rawValue))) }

    /// Transient: worth a retry.
    var isTransient: Bool {
        [
            CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_OPERATION_TIMEDOUT, CURLE_PARTIAL_FILE,
            CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM,
        ].contains(CURLcode(rawValue))
    }

    /// Connectivity (nothing reached the server): foreground transfers fail fast on these.
    var isConnectivity: Bool {
        [CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY].contains(CURLcode(rawValue))
    }

    var isTLS: Bool {
        [
            CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_ISSUER_ERROR,
        ].contains(CURLcode(rawValue))
    }
}
