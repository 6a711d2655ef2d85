/// Where a content-addressed download's body goes instead of a partial file
/// (``DownloadRequest/sink``).
///
/// The bytes of such a resource are fixed before it is fetched (an asset pack's bundle: its size
/// and the SHA-256 of each chunk in it come from a signed index), so its owner checks them as they
/// land, and a resume needs no validator: whatever the server says about versions, the engine
/// asks for `Range: bytes=N-` from the sink's kept length N, with no `If-Range`. A response that
/// starts before N (a 200 from a server that ignores `Range`, a 206 from an earlier offset) is
/// read from its start with the bytes before N dropped, and the sink is told why
/// (``note(_:)``); a 206 that starts after N is not used (the request starts again without a
/// range). A response cut short is resumed from what the sink kept.
///
/// Called on the engine thread only, one call at a time.
package protocol DownloadSink: AnyObject, Sendable {
    /// The bytes from the resource's start that are kept: the next request asks from there.
    /// Drops whatever the sink holds past them (a unit of its own that a request's end cut short).
    func rewind() -> Int64
    /// The next body bytes, continuing exactly the ones it took since ``rewind()``. An error
    /// ends the transfer: ``DownloadError/Code/noSpace`` (the owner may start it again once there
    /// is room) or any other (it fails).
    func take(_ bytes: UnsafeRawBufferPointer) throws(DownloadError)
    /// The whole resource arrived (as many bytes as ``DownloadRequest/expectedSize``).
    func finish() throws(DownloadError)
    /// Something for the owner's log: bytes fetched again, and why (the server ignored `Range`,
    /// answered another range).
    func note(_ message: String)
}
