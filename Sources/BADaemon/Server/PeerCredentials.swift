import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// The peer of a unix socket as the kernel reports it (`SO_PEERCRED`): who really connected,
/// whatever the client claims in `hello`.
///
/// Laid out exactly like Linux's `struct ucred` (pid, uid, gid: 12 bytes), so it can be read with
/// `getsockopt` directly; our own type rather than Glibc's so it is `Sendable` across modules.
struct PeerCredentials: Sendable, Hashable {
    var pid: Int32
    var uid: UInt32
    var gid: UInt32

    /// Whether a peer may talk to basd: only processes of basd's own user (basd is per user; the
    /// socket's 0600 mode and 0700 folder are the first fence, this is the second).
    static func isAllowed(peerUID: UInt32, daemonUID: UInt32) -> Bool { peerUID == daemonUID }

    /// Reads the peer credentials of a connected unix socket channel.
    /// The corresponding C function is `getsockopt(SOL_SOCKET, SO_PEERCRED)`.
    static func of(_ channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(DaemonError(.socket, "the connection has no socket options"))
        }
        // Kept internal and non-inlinable: NIO warns that unsafeGetSocketOption must not be called from
        // public inlinable code (a libc-type Sendability lookup issue).
        return provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
    }
}
